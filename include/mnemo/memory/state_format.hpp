// The state file format shared by every memory strategy: a fixed little-endian
// header that says what wrote it (strategy, model shape, K/V element types, RoPE
// of the cached keys), then a payload guarded by its length and an FNV-1a 64
// checksum. Readers check everything before they change anything (spec §8.5 LIB).
//
//   u32 magic 'MNMS'  u16 version  u16 strategy  i32 seq (-1: whole memory)
//   u32 n_layer  u32 n_head_kv  u32 d_k  u32 d_v  u32 k_type  u32 v_type (ggml ids)
//   u8 rope layout  u8 0  u16 0  u32 n_rot  f32 freq_base  f32 freq_scale
//   u32 n_stream  u64 payload bytes  u64 FNV-1a 64 of the 64 header bytes before it
//   and then of the payload  | payload
// The checksum covers the header too, so no single damaged bit (the source sequence
// id included, which no other check sees) goes unnoticed.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::memory {

inline constexpr std::uint32_t k_state_magic = 0x534d4e4du;  // "MNMS" little-endian
inline constexpr std::uint16_t k_state_version = 1;

enum class strategy_id : std::uint16_t {
  full = 1,
  sliding_window = 2,
  split_stream = 3,
  recurrent = 4,
  bounded = 5,
  composite = 6,
};

struct state_header {
  std::uint16_t strategy = 0;
  std::int32_t seq = -1;
  std::uint32_t n_layer = 0, n_head_kv = 0, d_k = 0, d_v = 0, k_type = 0, v_type = 0;
  std::uint8_t rope_layout = 0;
  std::uint32_t n_rot = 0;
  float freq_base = 0, freq_scale = 0;
  std::uint32_t n_stream = 1;

  static constexpr std::size_t bytes = 4 + 2 + 2 + 4 + 6 * 4 + 4 + 4 + 4 + 4 + 4 + 8 + 8;
};

inline std::uint64_t fnv1a64(std::span<const std::uint8_t> data,
                             std::uint64_t h = 0xcbf29ce484222325ull) noexcept {
  for (std::uint8_t b : data) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

/// Appends little-endian values to a byte vector.
class byte_writer {
 public:
  explicit byte_writer(std::vector<std::uint8_t>& out) : out_(out) {}
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::size_t size() const noexcept { return out_.size(); }

 private:
  std::vector<std::uint8_t>& out_;
};

/// Reads little-endian values from a byte span; every read is bounds-checked and
/// a failed read leaves the reader failed for good.
class byte_reader {
 public:
  explicit byte_reader(std::span<const std::uint8_t> in) : in_(in) {}
  template <class T>
  bool get(T& v) {
    if (!ok_ || in_.size() - at_ < sizeof(T)) return ok_ = false;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  /// A view of the next n bytes, or null.
  const std::uint8_t* get_bytes(std::size_t n) {
    if (!ok_ || in_.size() - at_ < n) {
      ok_ = false;
      return nullptr;
    }
    const std::uint8_t* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  bool ok() const noexcept { return ok_; }
  std::size_t remaining() const noexcept { return in_.size() - at_; }
  std::size_t offset() const noexcept { return at_; }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

/// Writes header + payload (the payload is built by the caller).
inline std::vector<std::uint8_t> seal_state(const state_header& h, const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out;
  out.reserve(state_header::bytes + payload.size());
  byte_writer w(out);
  w.put(k_state_magic);
  w.put(k_state_version);
  w.put(h.strategy);
  w.put(h.seq);
  for (std::uint32_t v : {h.n_layer, h.n_head_kv, h.d_k, h.d_v, h.k_type, h.v_type}) w.put(v);
  w.put(h.rope_layout);
  w.put(std::uint8_t{0});
  w.put(std::uint16_t{0});
  w.put(h.n_rot);
  w.put(h.freq_base);
  w.put(h.freq_scale);
  w.put(h.n_stream);
  w.put(static_cast<std::uint64_t>(payload.size()));
  w.put(fnv1a64(payload, fnv1a64(out)));
  w.put_bytes(payload.data(), payload.size());
  return out;
}

/// Parses and checks the header against what the reader expects (everything but
/// `seq`), verifies length and checksum, and returns the payload.
inline result<std::span<const std::uint8_t>> open_state(std::span<const std::uint8_t> data,
                                                        const state_header& expect,
                                                        std::int32_t& seq_out) {
  byte_reader r(data);
  std::uint32_t magic = 0;
  std::uint16_t version = 0, strategy = 0, pad16 = 0;
  std::uint8_t layout = 0, pad8 = 0;
  state_header h;
  std::uint64_t n_payload = 0, sum = 0;
  r.get(magic);
  r.get(version);
  r.get(strategy);
  r.get(h.seq);
  for (std::uint32_t* v : {&h.n_layer, &h.n_head_kv, &h.d_k, &h.d_v, &h.k_type, &h.v_type}) r.get(*v);
  r.get(layout);
  r.get(pad8);
  r.get(pad16);
  r.get(h.n_rot);
  r.get(h.freq_base);
  r.get(h.freq_scale);
  r.get(h.n_stream);
  r.get(n_payload);
  r.get(sum);
  if (!r.ok())
    return make_status(status_code::corrupt_data, "state: %zu bytes is shorter than the %zu-byte header",
                       data.size(), state_header::bytes);
  if (magic != k_state_magic)
    return make_status(status_code::corrupt_data, "state: not a mnemo state (magic 0x%08x)", magic);
  if (version != k_state_version)
    return make_status(status_code::unsupported, "state: version %u, this build reads version %u",
                       version, k_state_version);
  if (strategy != expect.strategy)
    return make_status(status_code::invalid_argument,
                       "state: written by memory strategy %u, read by strategy %u", strategy,
                       expect.strategy);
  if (h.n_layer != expect.n_layer || h.n_head_kv != expect.n_head_kv || h.d_k != expect.d_k ||
      h.d_v != expect.d_v)
    return make_status(status_code::invalid_argument,
                       "state: model shape %u layers x %u KV heads x (%u, %u) does not match this "
                       "memory's %u x %u x (%u, %u)",
                       h.n_layer, h.n_head_kv, h.d_k, h.d_v, expect.n_layer, expect.n_head_kv,
                       expect.d_k, expect.d_v);
  if (h.k_type != expect.k_type || h.v_type != expect.v_type)
    return make_status(status_code::invalid_argument,
                       "state: K/V element types (ggml %u, %u) differ from this memory's (%u, %u)",
                       h.k_type, h.v_type, expect.k_type, expect.v_type);
  if (layout != expect.rope_layout || h.n_rot != expect.n_rot || h.freq_base != expect.freq_base ||
      h.freq_scale != expect.freq_scale)
    return make_status(status_code::invalid_argument,
                       "state: cached keys were rotated with another RoPE configuration");
  if (h.n_stream != expect.n_stream)
    return make_status(status_code::invalid_argument, "state: %u streams, this memory has %u",
                       h.n_stream, expect.n_stream);
  if (pad8 != 0 || pad16 != 0) return make_status(status_code::corrupt_data, "state: bad header padding");
  if (n_payload != r.remaining())
    return make_status(status_code::corrupt_data,
                       "state: header announces %llu payload bytes, %zu are present",
                       static_cast<unsigned long long>(n_payload), r.remaining());
  const auto payload = data.subspan(r.offset());
  if (fnv1a64(payload, fnv1a64(data.first(state_header::bytes - sizeof sum))) != sum)
    return make_status(status_code::corrupt_data, "state: checksum mismatch (the data is damaged)");
  seq_out = h.seq;
  return payload;
}

}  // namespace mnemo::memory
