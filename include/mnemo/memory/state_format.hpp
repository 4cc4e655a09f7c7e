// The state file format shared by every memory strategy: a fixed little-endian
// header that says what wrote it (strategy, model shape, K/V element types, RoPE
// of the cached keys), then a payload guarded by its length and a 64-bit checksum.
// Readers check everything before they change anything (docs/memory.md, "State files").
//
//   u32 magic 'MNMS'  u16 version  u16 strategy  i32 seq (-1: whole memory)
//   u32 n_layer  u32 n_head_kv  u32 d_k  u32 d_v  u32 k_type  u32 v_type (ggml ids)
//   u8 rope layout  u8 0  u16 0  u32 n_rot  f32 freq_base  f32 freq_scale
//   u32 n_stream  u64 rope detail  u64 payload bytes
//   u64 checksum64(payload, checksum64(the 72 header bytes before it))  | payload
// Version 1 files (no rope detail: a 72-byte header) still load into memories whose
// RoPE has no frequency factors and no YaRN ramp.
// The checksum covers the header too, so no single damaged bit (the source sequence
// id included, which no other check sees) goes unnoticed.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/memory/types.hpp"

namespace mnemo::memory {

inline constexpr std::uint32_t k_state_magic = 0x534d4e4du;  // "MNMS" little-endian
inline constexpr std::uint16_t k_state_version = 2;

enum class strategy_id : std::uint16_t {
  full = 1,
  sliding_window = 2,
  split_stream = 3,
  recurrent = 4,
  bounded = 5,
  composite = 6,
  split_window = 7,
};

/// The strategy a state file's header names, as its type is spelled ("split_stream").
inline const char* strategy_name(std::uint16_t id) noexcept {
  switch (static_cast<strategy_id>(id)) {
    case strategy_id::full: return "full_cache";
    case strategy_id::sliding_window: return "sliding_window";
    case strategy_id::split_stream: return "split_stream";
    case strategy_id::recurrent: return "recurrent";
    case strategy_id::bounded: return "bounded";
    case strategy_id::composite: return "layered";
    case strategy_id::split_window: return "split_window";
  }
  return nullptr;
}

struct state_header {
  std::uint16_t strategy = 0;
  std::int32_t seq = -1;
  std::uint32_t n_layer = 0, n_head_kv = 0, d_k = 0, d_v = 0, k_type = 0, v_type = 0;
  std::uint8_t rope_layout = 0;
  std::uint32_t n_rot = 0;
  float freq_base = 0, freq_scale = 0;
  std::uint32_t n_stream = 1;
  std::uint64_t rope_detail = 0;  // rope_detail_of(): 0 for plain RoPE

  static constexpr std::size_t bytes = 4 + 2 + 2 + 4 + 6 * 4 + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 8;
  static constexpr std::size_t bytes_v1 = bytes - 8;  // without rope_detail
};

/// The state checksum: the bytes as little-endian 64-bit words dealt round-robin to
/// four lanes, each lane h = ((h ^ w) * P) ^ (>> 32) (a bijection per word, so any
/// single damaged word changes its lane); tail bytes go to lane 0 one by one; the
/// lanes and the length are folded with a multiply-xorshift. Four independent
/// multiply chains run at ~8 bytes per cycle, where a byte-wise hash (FNV-1a) waits on
/// one serial multiply per byte and would dominate the cost of saving a state.
inline std::uint64_t checksum64(std::span<const std::uint8_t> d, std::uint64_t seed = 0) noexcept {
  constexpr std::uint64_t P = 0x9e3779b97f4a7c15ull, M = 0xff51afd7ed558ccdull;
  std::uint64_t h[4] = {seed ^ 0x243f6a8885a308d3ull, seed ^ 0x13198a2e03707344ull,
                        seed ^ 0xa4093822299f31d0ull, seed ^ 0x082efa98ec4e6c89ull};
  std::size_t i = 0;
  for (; i + 32 <= d.size(); i += 32)
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, d.data() + i + 8 * k, 8);
      h[k] = (h[k] ^ w) * P;
      h[k] ^= h[k] >> 32;
    }
  for (; i < d.size(); ++i) h[0] = (h[0] ^ d[i]) * P;
  std::uint64_t r = d.size();
  for (std::uint64_t lane : h) {
    r = (r ^ lane) * M;
    r ^= r >> 33;
  }
  return r;
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

/// What of a RoPE configuration the header's freq_base and freq_scale do not say: 0
/// for plain RoPE (no frequency factors, no YaRN ramp, magnitude 1), else a checksum
/// of the factors (Llama 3 `rope_freqs`) and of the YaRN parameters that change the
/// angles or magnitudes. Keys rotated one way must not load into a memory that rotates
/// (and shifts) them another.
inline std::uint64_t rope_detail_of(const attention::rope_config& r) {
  const bool yarn = r.yarn.ext_factor != 0.0f;
  if (r.freq_factors.empty() && !yarn && r.yarn.attn_factor == 1.0f) return 0;
  std::vector<std::uint8_t> bytes;
  byte_writer w(bytes);
  w.put(static_cast<std::uint32_t>(r.freq_factors.size()));
  for (float f : r.freq_factors) w.put(f);
  w.put(r.yarn.attn_factor);
  w.put(r.yarn.ext_factor);
  if (yarn) {
    w.put(r.yarn.beta_fast);
    w.put(r.yarn.beta_slow);
    w.put(r.yarn.n_ctx_orig);
  }
  const std::uint64_t h = checksum64(bytes);
  return h == 0 ? 1 : h;  // 0 means plain
}

/// The header of a K/V strategy (full cache, split streams, sliding window, bounded):
/// its config's `shape` and `rope`, and the K/V element types.
template <class KE, class VE, class Config>
state_header kv_state_header(strategy_id id, std::int32_t seq, const Config& cfg,
                             std::uint32_t n_stream = 1) {
  state_header h;
  h.strategy = static_cast<std::uint16_t>(id);
  h.seq = seq;
  h.n_layer = static_cast<std::uint32_t>(cfg.shape.n_layer);
  h.n_head_kv = static_cast<std::uint32_t>(cfg.shape.n_head_kv);
  h.d_k = static_cast<std::uint32_t>(cfg.shape.d_k);
  h.d_v = static_cast<std::uint32_t>(cfg.shape.d_v);
  h.k_type = dtype::ggml_type_id(dtype::element_type_of<KE>);
  h.v_type = dtype::ggml_type_id(dtype::element_type_of<VE>);
  h.rope_layout = static_cast<std::uint8_t>(cfg.rope.layout);
  h.n_rot = static_cast<std::uint32_t>(cfg.rope.n_rot);
  h.freq_base = cfg.rope.freq_base;
  h.freq_scale = cfg.rope.freq_scale;
  h.n_stream = n_stream;
  h.rope_detail = rope_detail_of(cfg.rope);
  return h;
}

/// The header of a K/V memory m of strategy id: its config's shape and RoPE, its K/V
/// element types (M::k_element, M::v_element), and n_stream.
template <class M>
state_header memory_state_header(strategy_id id, std::int32_t seq, const M& m,
                                 std::uint32_t n_stream = 1) {
  return kv_state_header<typename M::k_element, typename M::v_element>(id, seq, m.config(),
                                                                       n_stream);
}

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

/// Builds a state in a caller's buffer (reusing its capacity, so saving in a loop
/// does not fault in fresh pages each time): the header now, the payload through
/// payload(), then seal() fills in the payload length and the checksum.
class state_builder {
 public:
  state_builder(std::vector<std::uint8_t>& out, const state_header& h, std::size_t payload_bytes)
      : out_(out), w_(out) {
    out_.clear();
    out_.reserve(state_header::bytes + payload_bytes);
    w_.put(k_state_magic);
    w_.put(k_state_version);
    w_.put(h.strategy);
    w_.put(h.seq);
    for (std::uint32_t v : {h.n_layer, h.n_head_kv, h.d_k, h.d_v, h.k_type, h.v_type}) w_.put(v);
    w_.put(h.rope_layout);
    w_.put(std::uint8_t{0});
    w_.put(std::uint16_t{0});
    w_.put(h.n_rot);
    w_.put(h.freq_base);
    w_.put(h.freq_scale);
    w_.put(h.n_stream);
    w_.put(h.rope_detail);
    w_.put(std::uint64_t{0});  // payload bytes, by seal()
    w_.put(std::uint64_t{0});  // checksum, by seal()
  }
  byte_writer& payload() noexcept { return w_; }
  void seal() {
    constexpr std::size_t at_len = state_header::bytes - 16, at_sum = state_header::bytes - 8;
    const std::uint64_t n = out_.size() - state_header::bytes;
    std::memcpy(out_.data() + at_len, &n, 8);  // before the checksum, which covers it
    const std::span<const std::uint8_t> all(out_);
    const std::uint64_t sum =
        checksum64(all.subspan(state_header::bytes), checksum64(all.first(at_sum)));
    std::memcpy(out_.data() + at_sum, &sum, 8);
  }

 private:
  std::vector<std::uint8_t>& out_;
  byte_writer w_;
};

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
  for (std::uint32_t* v : {&h.n_layer, &h.n_head_kv, &h.d_k, &h.d_v, &h.k_type, &h.v_type})
    r.get(*v);
  r.get(layout);
  r.get(pad8);
  r.get(pad16);
  r.get(h.n_rot);
  r.get(h.freq_base);
  r.get(h.freq_scale);
  r.get(h.n_stream);
  if (version != 1) r.get(h.rope_detail);
  r.get(n_payload);
  r.get(sum);
  const std::size_t header_bytes = version == 1 ? state_header::bytes_v1 : state_header::bytes;
  if (!r.ok())
    return make_status(status_code::corrupt_data,
                       "state: %zu bytes is shorter than the %zu-byte header", data.size(),
                       header_bytes);
  if (magic != k_state_magic)
    return make_status(status_code::corrupt_data, "state: not a mnemo state (magic 0x%08x)", magic);
  if (version != 1 && version != k_state_version)
    return make_status(status_code::unsupported,
                       "state: version %u, this build reads versions 1 and %u", version,
                       k_state_version);
  if (strategy != expect.strategy) {
    const char* written = strategy_name(strategy);
    const char* reader = strategy_name(expect.strategy);
    char unknown[32];
    if (written == nullptr) {
      std::snprintf(unknown, sizeof unknown, "unknown strategy %u", strategy);
      written = unknown;
    }
    return make_status(status_code::invalid_argument,
                       "state: written by %s, read by %s: a state loads only into the strategy "
                       "that wrote it",
                       written, reader ? reader : "?");
  }
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
  if (h.rope_detail != expect.rope_detail)
    return make_status(status_code::invalid_argument,
                       "state: cached keys were rotated with other RoPE frequency factors or "
                       "YaRN parameters%s",
                       version == 1 ? " (a version 1 file has none)" : "");
  if (h.n_stream != expect.n_stream)
    return make_status(status_code::invalid_argument, "state: %u streams, this memory has %u",
                       h.n_stream, expect.n_stream);
  if (pad8 != 0 || pad16 != 0)
    return make_status(status_code::corrupt_data, "state: bad header padding");
  if (n_payload != r.remaining())
    return make_status(status_code::corrupt_data,
                       "state: header announces %llu payload bytes, %zu are present",
                       static_cast<unsigned long long>(n_payload), r.remaining());
  const auto payload = data.subspan(r.offset());
  if (checksum64(payload, checksum64(data.first(header_bytes - sizeof sum))) != sum)
    return make_status(status_code::corrupt_data, "state: checksum mismatch (the data is damaged)");
  seq_out = h.seq;
  return payload;
}

/// What every memory checks before it writes a state: the sequence (-1: the whole
/// memory) and that no batch is open.
inline status check_state_write(seq_id s, seq_id n_seq_max, bool in_batch) {
  MNEMO_RETURN_IF_ERROR(check_seq(s, n_seq_max, "state_write", true));
  if (in_batch)
    return make_status(status_code::invalid_argument, "state_write: a batch is being applied");
  return {};
}

/// A state opened for reading into a memory: its payload and the sequence it holds
/// (-1: the whole memory).
struct opened_state {
  std::span<const std::uint8_t> payload;
  std::int32_t src = -1;
};

/// What every memory checks before it reads a state into `dest` (-1: the whole memory):
/// the destination, no open batch, the header against `expect` (open_state), and that
/// a whole state goes into the whole memory and a sequence's state into a sequence.
inline result<opened_state> open_state_into(std::span<const std::uint8_t> data,
                                            const state_header& expect, seq_id dest,
                                            seq_id n_seq_max, bool in_batch) {
  MNEMO_RETURN_IF_ERROR(check_seq(dest, n_seq_max, "state_read", true));
  if (in_batch)
    return make_status(status_code::invalid_argument, "state_read: a batch is being applied");
  opened_state st;
  MNEMO_ASSIGN_OR_RETURN(st.payload, open_state(data, expect, st.src));
  if ((dest < 0) != (st.src < 0))
    return make_status(
        status_code::invalid_argument, "state_read: a %s state cannot be loaded into %s",
        st.src < 0 ? "whole-memory" : "per-sequence", dest < 0 ? "the whole memory" : "a sequence");
  return st;
}

/// The state of sequence s (or of the whole memory, s == -1) of any memory, as a new
/// buffer: each strategy's state_write(m, s, out) reuses a caller's buffer instead.
template <class M>
requires requires(M& m, seq_id s, std::vector<std::uint8_t>& out) {
  { state_write(m, s, out) } -> std::same_as<status>;
}
result<std::vector<std::uint8_t>> state_write(M& m, seq_id s = -1) {
  std::vector<std::uint8_t> out;
  MNEMO_RETURN_IF_ERROR(state_write(m, s, out));
  return out;
}

/// A payload of n parts, each a complete state of its own (composite memories):
/// per part u64 bytes, then its bytes.
inline std::size_t parts_bytes(const std::vector<std::vector<std::uint8_t>>& parts) {
  std::size_t n = 0;
  for (const auto& p : parts) n += 8 + p.size();
  return n;
}
inline void put_parts(byte_writer& w, const std::vector<std::vector<std::uint8_t>>& parts) {
  for (const auto& p : parts) {
    w.put(static_cast<std::uint64_t>(p.size()));
    w.put_bytes(p.data(), p.size());
  }
}
/// Reads n parts and checks the payload ends with them; `what` names a part in a refusal.
inline status get_parts(byte_reader& r, std::uint32_t n, const char* what,
                        std::vector<std::span<const std::uint8_t>>& out) {
  out.clear();
  for (std::uint32_t k = 0; k < n; ++k) {
    std::uint64_t len = 0;
    r.get(len);
    const std::uint8_t* p = r.ok() && len <= r.remaining() ? r.get_bytes(len) : nullptr;
    if (p == nullptr)
      return make_status(status_code::corrupt_data, "state_read: %s %u is truncated", what, k);
    out.emplace_back(p, len);
  }
  if (r.remaining() != 0)
    return make_status(status_code::corrupt_data, "state_read: %zu trailing bytes", r.remaining());
  return {};
}

}  // namespace mnemo::memory
