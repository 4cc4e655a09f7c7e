// Shared harness of the memory behavioural tests (docs/full-cache.md):
// make a cache, dec(s, a..b) with deterministic K/V rows derived from (seed, layer,
// seq, pos), a tiny batch-continuity check standing in for batch validation (docs/batch.md
// rules; the real validator lives in mnemo/batch), and introspection of
// cell metadata and raw K/V bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/attention/rope.hpp"
#include "mnemo/dtype/dtype.hpp"
#include "mnemo/memory/memory.hpp"

namespace mnemo::memtest {

/// The seed of every K/V value the harness writes; failures print it.
inline constexpr std::uint64_t k_seed = 0x6d656d7370656331ull;

inline std::string seed_trace(std::uint64_t seed = k_seed) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "K/V seed 0x%016llx", static_cast<unsigned long long>(seed));
  return buf;
}

/// splitmix64 (Steele et al. 2014): a stateless, well-mixed hash of one word.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A deterministic value in [-1, 1) for element i of the K (kind 0) or V (kind 1)
/// row of (layer, seq, pos).
inline float kv_value(std::uint64_t seed, std::size_t layer, seq_id s, pos_t p, int kind,
                      std::size_t i) noexcept {
  std::uint64_t h =
      mix64(seed ^ mix64(layer * 0x100000001b3ull + static_cast<std::uint64_t>(kind)));
  h = mix64(h ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(s)) << 32 |
                 static_cast<std::uint32_t>(p)));
  h = mix64(h ^ i);
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

inline memory::kv_shape default_shape() { return {2, 2, 32, 32}; }

inline attention::rope_config default_rope() {
  attention::rope_config r;
  r.layout = attention::rope_layout::normal;
  r.n_rot = 32;
  return r;
}

struct cache_options {
  memory::kv_shape shape = default_shape();
  attention::rope_config rope = default_rope();
  bool shift_supported = true;
};

/// KV(size, n_seq_max, U) of the spec's notation. Aborts the test binary when the
/// configuration itself is refused (a harness bug, not a behaviour under test).
template <class KE, class VE = KE>
memory::full_cache<KE, VE> make_cache(std::size_t size, seq_id n_seq_max,
                                      const cache_options& o = {}) {
  memory::full_cache_config cfg;
  cfg.shape = o.shape;
  cfg.size = size;
  cfg.n_seq_max = n_seq_max;
  cfg.rope = o.rope;
  cfg.shift_supported = o.shift_supported;
  auto c = memory::full_cache<KE, VE>::make(cfg);
  if (!c.is_ok()) {
    std::fprintf(stderr, "harness: make_cache failed: %s\n", c.error().to_string().c_str());
    std::abort();
  }
  return std::move(c).value();
}

// ---- K/V rows ------------------------------------------------------------------

/// The raw (unrotated) K row [n_head_kv * d_k] of (layer, seq, pos).
inline std::vector<float> raw_k(const memory::kv_shape& sh, std::size_t layer, seq_id s, pos_t p,
                                std::uint64_t seed = k_seed) {
  std::vector<float> r(sh.n_head_kv * sh.d_k);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = kv_value(seed, layer, s, p, 0, i);
  return r;
}

inline std::vector<float> raw_v(const memory::kv_shape& sh, std::size_t layer, seq_id s, pos_t p,
                                std::uint64_t seed = k_seed) {
  std::vector<float> r(sh.n_head_kv * sh.d_v);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = kv_value(seed, layer, s, p, 1, i);
  return r;
}

/// raw_k(layer, s, raw_pos) with every head rotated to position `at` (what a model
/// stores for a token at `at`; at = raw_pos for a fresh token). Config: any strategy's
/// configuration with `shape` and `rope` (full_cache_config, split_stream_config).
template <class Config>
std::vector<float> rotated_k(const Config& cfg, std::size_t layer, seq_id s, pos_t raw_pos,
                             pos_t at, std::uint64_t seed = k_seed) {
  auto r = raw_k(cfg.shape, layer, s, raw_pos, seed);
  for (std::size_t h = 0; h < cfg.shape.n_head_kv; ++h)
    attention::rope_rotate(cfg.rope, r.data() + h * cfg.shape.d_k, at);
  return r;
}

/// The cached K row of one cell, decoded to f32 by the scalar reference.
template <class C>
std::vector<float> cached_k(const C& c, std::size_t layer, std::size_t cell) {
  const auto& sh = c.config().shape;
  std::vector<float> r(sh.n_head_kv * sh.d_k);
  dtype::row_kernels<simd::scalar>::decode(c.storage().k(layer, cell), r.data(), r.size());
  return r;
}

// ---- decoding --------------------------------------------------------------------

struct token {
  pos_t pos;
  seq_set seqs;
};

inline token at(seq_id s, pos_t p) { return {p, seq_set::of(s)}; }
inline token at(std::initializer_list<seq_id> ss, pos_t p) {
  token t{p, {}};
  for (seq_id s : ss) t.seqs.insert(s);
  return t;
}
/// One token per position a..b (inclusive) of sequence s.
inline std::vector<token> run(seq_id s, pos_t a, pos_t b) {
  std::vector<token> r;
  for (pos_t p = a; p <= b; ++p) r.push_back(at(s, p));
  return r;
}

inline seq_id first_seq(const seq_set& o) {
  for (seq_id s = 0; s < k_max_seq; ++s)
    if (o.contains(s)) return s;
  return -1;
}

/// llama_decode's return codes (docs/memory.md), as far as the memory decides them.
enum decode_code : int { k_ok = 0, k_no_space = 1, k_aborted = 2, k_invalid = -1, k_failed = -2 };

struct decode_options {
  std::size_t n_ubatch = 0;  // tokens per micro-batch; 0: the whole batch in one
  int fail_after = -1;       // the caller "fails" after applying micro-batch k: rollback
  bool rope_keys = false;    // store K rotated at the token's position
  std::uint64_t seed = k_seed;
};

/// docs/batch.md's continuity rules for every sequence of the batch: it continues its
/// memory (min = pos_max + 1 when not empty), has no gaps, never decreases.
template <class C>
bool batch_is_continuous(const C& c, const std::vector<token>& batch) {
  for (seq_id s = 0; s < k_max_seq; ++s) {
    std::vector<pos_t> ps;
    for (const auto& t : batch)
      if (t.seqs.contains(s)) ps.push_back(t.pos);
    if (ps.empty()) continue;
    if (!std::is_sorted(ps.begin(), ps.end())) return false;
    const std::set<pos_t> distinct(ps.begin(), ps.end());
    if (ps.back() - ps.front() + 1 > static_cast<pos_t>(distinct.size())) return false;
    const pos_t x = c.seq_pos_max(s);
    if (x >= 0 && ps.front() != x + 1) return false;
  }
  return true;
}

/// Drives one batch through the memory as a decode does: update, prepare every
/// micro-batch, apply + write K/V for every layer, commit (or rollback).
template <class C>
int decode(C& c, const std::vector<token>& batch, const decode_options& o = {},
           status* why = nullptr) {
  status ignored;
  status& st = why ? *why : ignored;
  if (batch.empty() || !batch_is_continuous(c, batch)) return k_invalid;
  if (st = c.update(); !st.is_ok()) return k_failed;
  const std::size_t n_ub = o.n_ubatch == 0 ? batch.size() : o.n_ubatch;
  std::vector<std::vector<pos_t>> pos;
  std::vector<std::vector<seq_set>> seqs;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (i % n_ub == 0) pos.emplace_back(), seqs.emplace_back();
    pos.back().push_back(batch[i].pos);
    seqs.back().push_back(batch[i].seqs);
  }
  std::vector<memory::ubatch_tokens> ubs;
  for (std::size_t u = 0; u < pos.size(); ++u) ubs.push_back({pos[u], seqs[u]});
  if (st = c.prepare(ubs); !st.is_ok())
    return st.code() == status_code::no_space ? k_no_space : k_invalid;
  const auto& cfg = c.config();
  for (std::size_t u = 0; u < ubs.size(); ++u) {
    if (st = c.apply(u, ubs[u]); !st.is_ok()) {
      c.rollback();
      return k_failed;
    }
    for (std::size_t j = 0; j < ubs[u].size(); ++j) {
      const seq_id s = first_seq(seqs[u][j]);
      const pos_t p = pos[u][j];
      for (std::size_t l = 0; l < cfg.shape.n_layer; ++l) {
        const auto k =
            o.rope_keys ? rotated_k(cfg, l, s, p, p, o.seed) : raw_k(cfg.shape, l, s, p, o.seed);
        const auto v = raw_v(cfg.shape, l, s, p, o.seed);
        c.write_kv(l, u, j, k.data(), v.data());
      }
    }
    if (static_cast<int>(u) == o.fail_after) {
      c.rollback();
      return k_aborted;
    }
  }
  c.commit();
  return k_ok;
}

/// dec(s, a..b) of the spec.
template <class C>
int dec(C& c, seq_id s, pos_t a, pos_t b, const decode_options& o = {}) {
  return decode(c, run(s, a, b), o);
}

// ---- introspection ------------------------------------------------------------------

struct cell_meta {
  pos_t pos;
  seq_set owners;
  pos_t shift;
  friend bool operator==(const cell_meta&, const cell_meta&) = default;
};

template <class C>
std::vector<cell_meta> cell_metas(const C& c) {
  std::vector<cell_meta> r;
  const auto& cells = c.cells();
  for (std::size_t i = 0; i < cells.size(); ++i)
    r.push_back({cells.pos(i), cells.owners(i), cells.shift(i)});
  return r;
}

/// Positions held by s, read from the cells (sorted, with multiplicity).
template <class C>
std::vector<pos_t> positions(const C& c, seq_id s) {
  std::vector<pos_t> r;
  const auto& cells = c.cells();
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i) && cells.owners(i).contains(s)) r.push_back(cells.pos(i));
  std::sort(r.begin(), r.end());
  return r;
}

/// Indices of the cells s holds.
template <class C>
std::vector<std::size_t> cells_of(const C& c, seq_id s) {
  std::vector<std::size_t> r;
  const auto& cells = c.cells();
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (!cells.empty(i) && cells.owners(i).contains(s)) r.push_back(i);
  return r;
}

inline std::vector<pos_t> range(pos_t a, pos_t b) {
  std::vector<pos_t> r;
  for (pos_t p = a; p <= b; ++p) r.push_back(p);
  return r;
}

/// Every raw K byte (kind 0) or V byte (kind 1), layer by layer, cell by cell.
template <class C>
std::vector<std::uint8_t> raw_bytes(const C& c, int kind) {
  const auto& kv = c.storage();
  const std::size_t row = kind == 0 ? kv.k_row_bytes() : kv.v_row_bytes();
  std::vector<std::uint8_t> r;
  r.reserve(kv.shape().n_layer * kv.size() * row);
  for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
    const auto* p = kind == 0 ? reinterpret_cast<const std::uint8_t*>(kv.k(l, 0))
                              : reinterpret_cast<const std::uint8_t*>(kv.v(l, 0));
    r.insert(r.end(), p, p + kv.size() * row);
  }
  return r;
}

/// Everything observable of a cache: metadata of every cell, the pending-shift flag,
/// the per-sequence position multisets kept by the cells, and every K/V byte.
struct snapshot {
  std::vector<cell_meta> cells;
  bool has_shift = false;
  std::size_t used = 0;
  std::vector<std::vector<std::pair<pos_t, int>>> seq_pos;  // (position, count)
  std::vector<std::uint8_t> k, v;
  std::size_t k_row = 0, v_row = 0;
};

/// Which K/V bytes a snapshot keeps: all, or those of non-empty cells (free cells'
/// rows read as zero), for operations that may scribble on free cells.
enum snapshot_rows { all_rows, live_rows };

template <class C>
snapshot snap(const C& c, snapshot_rows rows = all_rows) {
  snapshot s;
  s.cells = cell_metas(c);
  s.has_shift = c.has_pending_shift();
  s.used = c.used();
  for (seq_id q = 0; q < c.config().n_seq_max; ++q) s.seq_pos.push_back(c.cells().seq_positions(q));
  s.k = raw_bytes(c, 0);
  s.v = raw_bytes(c, 1);
  s.k_row = c.storage().k_row_bytes();
  s.v_row = c.storage().v_row_bytes();
  if (rows == live_rows) {
    const std::size_t n = c.size();
    for (std::size_t l = 0; l < c.config().shape.n_layer; ++l)
      for (std::size_t i = 0; i < n; ++i) {
        if (!c.cells().empty(i)) continue;
        std::fill_n(s.k.begin() + static_cast<std::ptrdiff_t>((l * n + i) * s.k_row), s.k_row, 0);
        std::fill_n(s.v.begin() + static_cast<std::ptrdiff_t>((l * n + i) * s.v_row), s.v_row, 0);
      }
  }
  return s;
}

inline std::string owners_string(const seq_set& o) {
  std::string r = "{";
  for (seq_id s = 0; s < k_max_seq; ++s)
    if (o.contains(s)) {
      if (r.size() > 1) r += ',';
      r += std::to_string(s);
    }
  return r + "}";
}

/// "" when a and b are equal, else a description of the first difference.
inline std::string first_difference(const snapshot& a, const snapshot& b) {
  char buf[256];
  if (a.cells.size() != b.cells.size()) return "cell counts differ";
  for (std::size_t i = 0; i < a.cells.size(); ++i) {
    const auto &x = a.cells[i], &y = b.cells[i];
    if (x == y) continue;
    std::snprintf(buf, sizeof buf,
                  "cell %zu: (pos %d, owners %s, shift %d) vs (pos %d, owners %s, shift %d)", i,
                  x.pos, owners_string(x.owners).c_str(), x.shift, y.pos,
                  owners_string(y.owners).c_str(), y.shift);
    return buf;
  }
  if (a.has_shift != b.has_shift) return "pending-shift flags differ";
  if (a.used != b.used)
    return "used counts differ: " + std::to_string(a.used) + " vs " + std::to_string(b.used);
  for (std::size_t q = 0; q < std::min(a.seq_pos.size(), b.seq_pos.size()); ++q)
    if (a.seq_pos[q] != b.seq_pos[q])
      return "position multisets of seq " + std::to_string(q) + " differ";
  for (int kind = 0; kind < 2; ++kind) {
    const auto &x = kind == 0 ? a.k : a.v, &y = kind == 0 ? b.k : b.v;
    const std::size_t row = kind == 0 ? a.k_row : a.v_row;
    if (x.size() != y.size()) return "K/V sizes differ";
    const auto m = std::mismatch(x.begin(), x.end(), y.begin());
    if (m.first == x.end()) continue;
    const std::size_t at = static_cast<std::size_t>(m.first - x.begin());
    const std::size_t cells = a.cells.size();
    std::snprintf(buf, sizeof buf, "%c byte %zu (layer %zu, cell %zu, byte %zu): 0x%02x vs 0x%02x",
                  kind == 0 ? 'K' : 'V', at, at / row / cells, at / row % cells, at % row, *m.first,
                  *m.second);
    return buf;
  }
  return "";
}

/// The cells' derived data agree with the per-cell metadata (docs/full-cache.md).
template <class C>
std::string check_invariants(const C& c) {
  const auto& cells = c.cells();
  std::size_t used = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells.empty(i)) {
      if (!cells.owners(i).empty()) return "empty cell " + std::to_string(i) + " has owners";
      continue;
    }
    ++used;
    if (cells.owners(i).empty()) return "cell " + std::to_string(i) + " is used without owner";
  }
  if (used != cells.used())
    return "used() is " + std::to_string(cells.used()) + ", cells say " + std::to_string(used);
  for (seq_id s = 0; s < c.config().n_seq_max; ++s) {
    std::map<pos_t, int> m;
    for (pos_t p : positions(c, s)) ++m[p];
    if (std::vector<std::pair<pos_t, int>>(m.begin(), m.end()) != cells.seq_positions(s))
      return "position multiset of seq " + std::to_string(s) + " is stale";
    const pos_t lo = m.empty() ? -1 : m.begin()->first, hi = m.empty() ? -1 : m.rbegin()->first;
    if (c.seq_pos_min(s) != lo || c.seq_pos_max(s) != hi)
      return "min/max of seq " + std::to_string(s) + " are stale";
  }
  for (std::size_t i = cells.used_max_p1(); i < cells.size(); ++i)
    if (!cells.empty(i)) return "cell " + std::to_string(i) + " is beyond used_max_p1";
  return "";
}

/// state_write, failing the test on error.
template <class C>
std::vector<std::uint8_t> state_of(C& c, seq_id s = -1) {
  auto r = memory::state_write(c, s);
  if (!r.is_ok()) {
    ADD_FAILURE() << "state_write(seq " << s << ") failed: " << r.error().to_string();
    return {};
  }
  return std::move(r).value();
}

// ---- state files ----------------------------------------------------------------------

/// The state header as documented in state_format.hpp, read at its byte offsets
/// (independently of the library's parser).
struct raw_header {
  std::uint32_t magic;
  std::uint16_t version, strategy;
  std::int32_t seq;
  std::uint32_t n_layer, n_head_kv, d_k, d_v, k_type, v_type;
  std::uint8_t rope_layout, pad8;
  std::uint16_t pad16;
  std::uint32_t n_rot;
  float freq_base, freq_scale;
  std::uint32_t n_stream;
  std::uint64_t rope_detail, payload_bytes, checksum;
};
inline constexpr std::size_t k_header_bytes = 80;
inline constexpr std::size_t k_length_offset = 64;
inline constexpr std::size_t k_checksum_offset = 72;

template <class T>
T read_at(const std::vector<std::uint8_t>& b, std::size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

template <class T>
void write_at(std::vector<std::uint8_t>& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof(T));
}

// The documented offsets happen to be the natural layout: no padding anywhere.
static_assert(offsetof(raw_header, strategy) == 6 && offsetof(raw_header, k_type) == 28 &&
              offsetof(raw_header, rope_layout) == 36 && offsetof(raw_header, n_rot) == 40 &&
              offsetof(raw_header, n_stream) == 52 && offsetof(raw_header, rope_detail) == 56 &&
              offsetof(raw_header, payload_bytes) == k_length_offset &&
              offsetof(raw_header, checksum) == k_checksum_offset &&
              sizeof(raw_header) == k_header_bytes);

inline raw_header read_header(const std::vector<std::uint8_t>& b) {
  raw_header h{};
  std::memcpy(&h, b.data(), std::min(sizeof h, b.size()));
  return h;
}

/// The documented checksum64 (state_format.hpp), written here again from its
/// description so the format is checked against the documentation rather than
/// against the library's own function.
inline std::uint64_t checksum_doc(const std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  const std::uint64_t mul = 0x9e3779b97f4a7c15ull, fold = 0xff51afd7ed558ccdull;
  std::uint64_t lane[4] = {0x243f6a8885a308d3ull ^ seed, 0x13198a2e03707344ull ^ seed,
                           0xa4093822299f31d0ull ^ seed, 0x082efa98ec4e6c89ull ^ seed};
  const std::size_t words = n / 32 * 4;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t x = 0;
    for (int byte = 7; byte >= 0; --byte) x = (x << 8) | p[w * 8 + static_cast<std::size_t>(byte)];
    std::uint64_t& l = lane[w % 4];
    l = (l ^ x) * mul;
    l ^= l >> 32;
  }
  for (std::size_t t = words * 8; t < n; ++t) lane[0] = (lane[0] ^ p[t]) * mul;
  std::uint64_t r = n;
  for (std::uint64_t l : lane) {
    r = (r ^ l) * fold;
    r ^= r >> 33;
  }
  return r;
}

/// The documented state checksum: the 72 header bytes before it, then the payload.
inline std::uint64_t expected_checksum(const std::vector<std::uint8_t>& b) {
  const std::uint64_t h = checksum_doc(b.data(), k_checksum_offset, 0);
  return checksum_doc(b.data() + k_header_bytes, b.size() - k_header_bytes, h);
}

/// Fixes the length and checksum fields after a deliberate edit, so that a test
/// reaches the check it is aimed at (a file "genuinely" written by another writer).
inline void reseal(std::vector<std::uint8_t>& b) {
  write_at<std::uint64_t>(b, k_length_offset, b.size() - k_header_bytes);
  write_at<std::uint64_t>(b, k_checksum_offset, expected_checksum(b));
}

/// Names element types in typed-test names ("f16", "q80": no underscores).
struct element_name {
  template <class E>
  static std::string GetName(int) {
    std::string r;
    for (char ch : dtype::element_traits<E>::name)
      if (ch != '_') r += ch;
    return r;
  }
};

/// A fixture whose tests print the K/V seed with every failure.
class traced_test : public ::testing::Test {
  ::testing::ScopedTrace trace_{__FILE__, __LINE__, seed_trace()};
};

}  // namespace mnemo::memtest
