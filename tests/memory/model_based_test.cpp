// Model-based randomized test of memory::full_cache: random operation sequences run on
// the cache and on the brute-force model of reference_model.hpp, and after EVERY step
// (and after every micro-batch inside a decode) every observable is compared:
// statuses, used cells, pending shift, seq_pos_min/max and the position multiset of
// every sequence, the report, and the multiset of occupied cells as
// (pos, owner set, pending shift, K bytes, V bytes) -- which contains each sequence's
// multiset of (pos, K, V) and also pins which sequences share a cell.
//
// Operations: decode batches (random multi-micro-batch splits, tokens in several
// sequences, positions continuing each sequence, update() first as a decode does),
// seq_rm / seq_cp / seq_keep / seq_add / seq_div (valid and invalid ids, divisor 0,
// models without K-shift), update, defragment, clear, whole and per-sequence
// state_write / state_read (into other sequences, mismatched kinds, damaged blobs),
// and injected failures: micro-batches applied then rolled back, partial commits,
// sequence operations attempted while a batch is prepared or open, and batches that
// must not fit. K/V rows are encoded by the independent encoders of
// tests/dtype/reference.hpp; with RoPE the expected keys after K-shifts are the raw
// keys rotated once by the accumulated shift (compared with a tolerance).
//
// A failure prints the seed, the configuration, the SHORTEST failing prefix of the
// seed's operations (re-run with fewer steps until it passes) and that prefix reduced
// further by dropping operations that are not needed to fail. Environment:
//   MNEMO_MODEL_SEED=n     run only seed n (to reproduce a failure)
//   MNEMO_MODEL_SEEDS=n    seeds per configuration      MNEMO_MODEL_STEPS=n  steps per seed
//   MNEMO_MODEL_STATS=1    print how often each operation succeeded or was refused
#define MNEMO_ENABLE_DASSERT 1  // the cell-array invariants are checked in Release too

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/slow_build.hpp"
#include "dtype/reference.hpp"
#include "memory/reference_model.hpp"
#include <gtest/gtest.h>
#include <unistd.h>

#include "mnemo/memory/memory.hpp"

namespace {

using namespace mnemo;
using mnemo_test::ref_blob;
using mnemo_test::ref_cell;
using mnemo_test::ref_mutation;
using mnemo_test::ref_rope;
using mnemo_test::ref_token;
using mnemo_test::reference_cache;

// Sanitizers and unoptimised builds run half the steps (~18 s under ASan+UBSan, Debug).
constexpr std::size_t k_slow_divisor = mnemo_test::k_slow_build ? 2 : 1;

std::size_t env_or(const char* name, std::size_t fallback) {
  const char* s = std::getenv(name);
  return s != nullptr && *s != '\0' ? static_cast<std::size_t>(std::strtoull(s, nullptr, 0))
                                    : fallback;
}

/// Deterministic on every platform (no std:: distributions).
struct rand_gen {
  mnemo_test::rng g;
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(g.next() % n); }
  int range(int lo, int hi) {
    return lo + static_cast<int>(below(static_cast<std::size_t>(hi - lo + 1)));
  }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }
};

// ------------------------------------------------------------------------ configuration

/// One cache configuration, drawn from the seed: size 8..40, 1..4 sequences, 1-2
/// layers, 1-2 KV heads of 32 (the q8_0 block), RoPE none or normal/neox.
struct run_config {
  std::size_t size = 8;
  seq_id n_seq_max = 1;
  memory::kv_shape shape;
  ref_rope rope;
  bool shift_supported = true;

  static run_config draw(std::uint64_t seed, bool with_rope) {
    rand_gen r{{seed * 0x9e3779b97f4a7c15ull + 1}};
    run_config c;
    c.size = static_cast<std::size_t>(r.range(8, 40));
    c.n_seq_max = r.range(1, 4);
    c.shape = {static_cast<std::size_t>(r.range(1, 2)), static_cast<std::size_t>(r.range(1, 2)), 32,
               32};
    c.shift_supported = !r.chance(8);
    if (with_rope) {
      c.rope.kind = r.chance(50) ? ref_rope::layout::normal : ref_rope::layout::neox;
      c.rope.n_rot = std::size_t{8} << r.below(3);  // 8, 16 or 32 of 32 dims rotate
      c.rope.freq_scale = r.chance(25) ? 0.5 : 1.0;
    }
    return c;
  }

  memory::full_cache_config cache_config() const {
    memory::full_cache_config f;
    f.shape = shape;
    f.size = size;
    f.n_seq_max = n_seq_max;
    f.shift_supported = shift_supported;
    f.rope.layout = rope.kind == ref_rope::layout::none     ? attention::rope_layout::none
                    : rope.kind == ref_rope::layout::normal ? attention::rope_layout::normal
                                                            : attention::rope_layout::neox;
    f.rope.n_rot = rope.n_rot;
    f.rope.freq_base = static_cast<float>(rope.freq_base);
    f.rope.freq_scale = static_cast<float>(rope.freq_scale);
    return f;
  }

  std::string describe() const {
    std::ostringstream o;
    o << "size " << size << ", n_seq_max " << n_seq_max << ", " << shape.n_layer << " layer(s) x "
      << shape.n_head_kv << " KV head(s) x " << shape.d_k << ", rope "
      << (rope.kind == ref_rope::layout::none     ? "none"
          : rope.kind == ref_rope::layout::normal ? "normal"
                                                  : "neox");
    if (rope.kind != ref_rope::layout::none)
      o << " n_rot " << rope.n_rot << " scale " << rope.freq_scale;
    if (!shift_supported) o << ", no K-shift";
    return o.str();
  }
};

// ------------------------------------------------------------------------ operations

enum class op_kind {
  decode,
  seq_rm,
  seq_cp,
  seq_keep,
  seq_add,
  seq_div,
  update,
  defragment,
  clear,
  state_write,
  state_read
};
enum class blob_damage { none, flip, truncate };

/// One concrete operation (replayable without the generator).
struct op {
  op_kind kind = op_kind::update;
  seq_id a = 0, b = 0;
  pos_t p0 = -1, p1 = -1, delta = 0;
  int divisor = 1;
  bool data = false;
  // decode: tokens in batch order, micro-batch sizes, how many micro-batches are
  // applied before the batch ends, how it ends, and an operation tried while it is open.
  std::vector<pos_t> pos;
  std::vector<std::vector<seq_id>> seqs;
  std::vector<std::size_t> ub_sizes;
  std::size_t n_apply = 0;
  std::size_t reapply = SIZE_MAX;  // a micro-batch applied a second time
  bool commit = true;
  std::vector<op> intruder;  // zero or one
  std::uint64_t data_seed = 0;
  // state: blob slot, and damage done to the bytes before reading
  std::size_t slot = 0;
  blob_damage damage = blob_damage::none;
  std::uint64_t damage_at = 0;

  std::string describe() const {
    std::ostringstream o;
    switch (kind) {
      case op_kind::decode: {
        o << "decode " << pos.size() << " token(s) [";
        for (std::size_t t = 0; t < pos.size(); ++t) {
          o << (t ? " " : "") << "{";
          for (std::size_t k = 0; k < seqs[t].size(); ++k) o << (k ? "," : "") << seqs[t][k];
          o << "}@" << pos[t];
        }
        o << "] as micro-batches (";
        for (std::size_t u = 0; u < ub_sizes.size(); ++u) o << (u ? "," : "") << ub_sizes[u];
        o << "), apply " << n_apply;
        if (reapply != SIZE_MAX) o << ", apply micro-batch " << reapply << " again";
        if (!intruder.empty()) o << ", then try " << intruder[0].describe();
        o << ", " << (commit ? "commit" : "rollback");
        break;
      }
      case op_kind::seq_rm: o << "seq_rm(" << a << ", " << p0 << ", " << p1 << ")"; break;
      case op_kind::seq_cp:
        o << "seq_cp(" << a << ", " << b << ", " << p0 << ", " << p1 << ")";
        break;
      case op_kind::seq_keep: o << "seq_keep(" << a << ")"; break;
      case op_kind::seq_add:
        o << "seq_add(" << a << ", " << p0 << ", " << p1 << ", " << delta << ")";
        break;
      case op_kind::seq_div:
        o << "seq_div(" << a << ", " << p0 << ", " << p1 << ", " << divisor << ")";
        break;
      case op_kind::update: o << "update()"; break;
      case op_kind::defragment: o << "defragment()"; break;
      case op_kind::clear: o << "clear(" << (data ? "true" : "false") << ")"; break;
      case op_kind::state_write: o << "state_write(" << a << ") -> slot " << slot; break;
      case op_kind::state_read:
        o << "state_read(slot " << slot << " -> " << a << ")";
        if (damage == blob_damage::flip) o << " with byte (" << damage_at << " mod size) flipped";
        if (damage == blob_damage::truncate)
          o << " truncated to (" << damage_at << " mod size) bytes";
        break;
    }
    return o.str();
  }
};

/// What the runs exercised, printed with MNEMO_MODEL_STATS=1 (to check that the
/// generator reaches the interesting cases: refusals, copy-on-write, rotated keys...).
struct coverage {
  std::map<std::string, std::map<std::string, long>> outcomes;  // operation -> status -> count
  long shared_cells = 0, rotated_cells = 0, full_cache_checks = 0, damaged_reads = 0;
  static coverage& get() {
    static coverage c;
    return c;
  }
  void print() const {
    for (const auto& [what, by] : outcomes) {
      std::printf("  %-22s", what.c_str());
      for (const auto& [st, n] : by) std::printf(" %s %ld;", st.c_str(), n);
      std::printf("\n");
    }
    std::printf(
        "  cells compared: %ld shared, %ld with rotated keys; %ld checks of a full cache; %ld "
        "damaged reads refused\n",
        shared_cells, rotated_cells, full_cache_checks, damaged_reads);
  }
};

op make_op(op_kind k) {
  op o;
  o.kind = k;
  return o;
}

// ------------------------------------------------------------------------ the harness

constexpr std::size_t k_slots = 4;
constexpr std::size_t k_header_bytes = 80;  // state_format.hpp: 12 + 6 x 4 + 4 + 3 x 4 + 4 + 3 x 8

/// The ggml type ids, written out (state header fields).
template <class E>
constexpr std::uint32_t ggml_id() {
  if constexpr (std::is_same_v<E, float>) return 0;
  if constexpr (std::is_same_v<E, dtype::f16>) return 1;
  if constexpr (std::is_same_v<E, dtype::block_q4_0>) return 2;
  if constexpr (std::is_same_v<E, dtype::block_q8_0>) return 8;
  return 999;
}

/// Bytes of one cell's row over all heads, computed from the GGUF block sizes.
template <class E>
constexpr std::size_t row_bytes(std::size_t n_values) {
  if constexpr (std::is_same_v<E, dtype::block_q8_0>) return n_values / 32 * 34;
  if constexpr (std::is_same_v<E, dtype::block_q4_0>) return n_values / 32 * 18;
  return n_values * sizeof(E);
}

template <class T>
T read_le(const std::vector<std::uint8_t>& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

/// The cache and the model side by side. Every method returns "" or what differed.
template <class KE, class VE>
class harness {
 public:
  explicit harness(const run_config& rc, ref_mutation m = ref_mutation::none)
      : rc_(rc),
        ref_({rc.size, rc.n_seq_max, rc.shift_supported, rc.rope.kind != ref_rope::layout::none,
              m}) {
    auto c = memory::full_cache<KE, VE>::make(rc.cache_config());
    if (!c.is_ok()) {
      error_ = "full_cache::make failed: " + c.error().to_string();
      return;
    }
    cache_ = std::move(c).value();
  }

  const std::string& error() const { return error_; }
  const reference_cache& ref() const { return ref_; }
  bool slot_filled(std::size_t s) const { return blobs_[s].has_value(); }
  seq_id slot_seq(std::size_t s) const { return blobs_[s]->model.seq; }

  std::string execute(const op& o) {
    switch (o.kind) {
      case op_kind::decode: return decode(o);
      case op_kind::seq_rm:
        return same("seq_rm", cache_->seq_rm(o.a, o.p0, o.p1), ref_.seq_rm(o.a, o.p0, o.p1));
      case op_kind::seq_cp:
        return same("seq_cp", cache_->seq_cp(o.a, o.b, o.p0, o.p1),
                    ref_.seq_cp(o.a, o.b, o.p0, o.p1));
      case op_kind::seq_keep: return same("seq_keep", cache_->seq_keep(o.a), ref_.seq_keep(o.a));
      case op_kind::seq_add:
        return same("seq_add", cache_->seq_add(o.a, o.p0, o.p1, o.delta),
                    ref_.seq_add(o.a, o.p0, o.p1, o.delta));
      case op_kind::seq_div:
        return same("seq_div", cache_->seq_div(o.a, o.p0, o.p1, o.divisor),
                    ref_.seq_div(o.a, o.p0, o.p1, o.divisor));
      case op_kind::update: return same("update", cache_->update(), ref_.update());
      case op_kind::defragment: return same("defragment", cache_->defragment(), ref_.defragment());
      case op_kind::clear:
        cache_->clear(o.data);
        ref_.clear();
        return {};
      case op_kind::state_write: return state_write(o);
      case op_kind::state_read: return state_read(o);
    }
    return "unknown operation";
  }

  /// Every observable of the cache against the model.
  std::string check() const {
    const auto& c = *cache_;
    std::ostringstream o;
    if (c.used() != ref_.used()) o << "used() " << c.used() << ", model " << ref_.used() << "\n";
    if (c.has_pending_shift() != ref_.has_shift())
      o << "has_pending_shift() " << c.has_pending_shift() << ", model " << ref_.has_shift()
        << "\n";
    for (seq_id s = -1; s <= rc_.n_seq_max; ++s) {
      if (c.seq_pos_min(s) != ref_.seq_pos_min(s) || c.seq_pos_max(s) != ref_.seq_pos_max(s))
        o << "seq " << s << ": pos_min/max " << c.seq_pos_min(s) << "/" << c.seq_pos_max(s)
          << ", model " << ref_.seq_pos_min(s) << "/" << ref_.seq_pos_max(s) << "\n";
      if (s < 0 || s >= rc_.n_seq_max) continue;
      const auto got = c.cells().seq_positions(s);
      const auto want = ref_.positions(s);
      if (got != std::vector<std::pair<pos_t, int>>(want.begin(), want.end()))
        o << "seq " << s << ": positions " << show(got) << ", model " << show(want) << "\n";
    }
    const memory::memory_report rep = c.report();
    std::vector<std::pair<seq_id, std::size_t>> per_seq;
    for (seq_id s = 0; s < rc_.n_seq_max; ++s) {
      std::size_t n = 0;
      for (const auto& [p, k] : ref_.positions(s)) n += static_cast<std::size_t>(k);
      if (n) per_seq.push_back({s, n});
    }
    if (rep.cells_used != ref_.used() || rep.cells != rc_.size || rep.cells_per_seq != per_seq)
      o << "report() disagrees:\n" << rep.to_string();
    if (!o.str().empty()) return o.str();
    if (auto e = check_layout(); !e.empty()) return e;
    return check_cells();
  }

 private:
  struct saved_blob {
    std::vector<std::uint8_t> bytes;
    ref_blob model;
  };

  /// A position multiset as (position, count) pairs: a std::map or a sorted vector.
  template <class Multiset>
  static std::string show(const Multiset& m) {
    std::ostringstream o;
    o << "{";
    bool first = true;
    for (const auto& [p, n] : m)
      for (int i = 0; i < n; ++i, first = false) o << (first ? "" : ",") << p;
    o << "}";
    return o.str();
  }

  static std::string same(const char* what, const status& got, status_code want) {
    ++coverage::get().outcomes[what][std::string(to_string(got.code()))];
    if (got.code() == want) return {};
    std::ostringstream o;
    o << what << " returned \"" << got.to_string() << "\", the model expects \"" << to_string(want)
      << "\"\n";
    return o.str();
  }

  /// Invariants of the cell array and of the attention view, by index.
  std::string check_layout() const {
    const auto& cells = cache_->cells();
    std::size_t n = 0, last = 0;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells.empty(i)) {
        if (!cells.owners(i).empty() || cells.shift(i) != 0)
          return "empty cell " + std::to_string(i) + " has owners or a shift\n";
        continue;
      }
      ++n;
      last = i + 1;
      if (cells.owners(i).empty())
        return "cell " + std::to_string(i) + " is used without an owner\n";
      for (seq_id s = rc_.n_seq_max; s < k_max_seq; ++s)
        if (cells.owners(i).contains(s))
          return "cell " + std::to_string(i) + " names seq " + std::to_string(s) + "\n";
    }
    if (n != cells.used())
      return "cell_array::used() " + std::to_string(cells.used()) + " but " + std::to_string(n) +
             " cells are used\n";
    if (cells.used_max_p1() != last)
      return "used_max_p1() " + std::to_string(cells.used_max_p1()) + ", last used cell + 1 is " +
             std::to_string(last) + "\n";
    for (std::size_t l = 0; l < rc_.shape.n_layer; ++l)
      if (cache_->segment(l).n_cells != last)
        return "segment(" + std::to_string(l) + ").n_cells misses used cells\n";
    return {};
  }

  struct canon {
    pos_t pos;
    std::vector<seq_id> owners;
    pos_t pending;
    std::vector<std::uint8_t> v, k;  // all layers, concatenated
    const ref_cell* model = nullptr;
    auto key() const { return std::tie(pos, owners, pending, v, k); }
  };

  std::string describe(const canon& c) const {
    std::ostringstream o;
    o << "pos " << c.pos << " owners {";
    for (std::size_t i = 0; i < c.owners.size(); ++i) o << (i ? "," : "") << c.owners[i];
    o << "} pending shift " << c.pending;
    if (c.model && c.model->rotated) o << " (keys rotated by " << c.model->rotated_by << ")";
    return o.str();
  }

  /// The occupied cells of both sides as sorted multisets, compared element by element.
  std::string check_cells() const {
    const auto& cells = cache_->cells();
    const auto& kv = cache_->storage();
    const std::size_t kb = kv.k_row_bytes(), vb = kv.v_row_bytes();
    std::vector<canon> got, want;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells.empty(i)) continue;
      canon c{cells.pos(i), {}, cells.shift(i), {}, {}, nullptr};
      for (seq_id s = 0; s < rc_.n_seq_max; ++s)
        if (cells.owners(i).contains(s)) c.owners.push_back(s);
      for (std::size_t l = 0; l < rc_.shape.n_layer; ++l) {
        const auto* k = reinterpret_cast<const std::uint8_t*>(kv.k(l, i));
        const auto* v = reinterpret_cast<const std::uint8_t*>(kv.v(l, i));
        c.k.insert(c.k.end(), k, k + kb);
        c.v.insert(c.v.end(), v, v + vb);
      }
      got.push_back(std::move(c));
    }
    for (const auto& m : ref_.cells()) {
      canon c{m.pos, std::vector<seq_id>(m.seqs.begin(), m.seqs.end()), m.pending, {}, {}, &m};
      for (std::size_t l = 0; l < rc_.shape.n_layer; ++l) {
        c.k.insert(c.k.end(), m.rows.k[l].begin(), m.rows.k[l].end());
        c.v.insert(c.v.end(), m.rows.v[l].begin(), m.rows.v[l].end());
      }
      want.push_back(std::move(c));
    }
    // K is the last key: rotated keys match only within a tolerance, and V rows are
    // random per token, so (pos, owners, shift, V) already pairs the cells up.
    auto less = [](const canon& x, const canon& y) { return x.key() < y.key(); };
    std::sort(got.begin(), got.end(), less);
    std::sort(want.begin(), want.end(), less);
    if (got.size() == rc_.size) ++coverage::get().full_cache_checks;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const canon &g = got[i], &w = want[i];
      coverage::get().shared_cells += g.owners.size() > 1;
      coverage::get().rotated_cells += w.model->rotated;
      if (g.pos != w.pos || g.owners != w.owners || g.pending != w.pending)
        return "cell #" + std::to_string(i) + " in sorted order: cache has " + describe(g) +
               ", model " + describe(w) + "\n";
      if (g.v != w.v) {
        const std::size_t at = static_cast<std::size_t>(
            std::mismatch(g.v.begin(), g.v.end(), w.v.begin()).first - g.v.begin());
        return "V of the cell at " + describe(g) + ": layer " + std::to_string(at / vb) + " byte " +
               std::to_string(at % vb) + " differs (" + std::to_string(g.v[at]) + " vs " +
               std::to_string(w.v[at]) + ")\n";
      }
      if (!w.model->rotated) {
        if (g.k != w.k) {
          const std::size_t at = static_cast<std::size_t>(
              std::mismatch(g.k.begin(), g.k.end(), w.k.begin()).first - g.k.begin());
          return "K of the cell at " + describe(g) + ": layer " + std::to_string(at / kb) +
                 " byte " + std::to_string(at % kb) + " differs (" + std::to_string(g.k[at]) +
                 " vs " + std::to_string(w.k[at]) + ")\n";
        }
        continue;
      }
      // Rotated keys (f32 K only): the raw keys rotated once by the total shift.
      for (std::size_t l = 0; l < rc_.shape.n_layer; ++l) {
        std::vector<float> expect = w.model->rows.k_raw[l];
        rc_.rope.rotate(expect, rc_.shape.d_k, static_cast<double>(w.model->rotated_by));
        for (std::size_t e = 0; e < expect.size(); ++e) {
          float x;
          std::memcpy(&x, g.k.data() + l * kb + e * sizeof(float), sizeof x);
          if (!(std::fabs(x - expect[e]) <= 1e-4f + 1e-4f * std::fabs(expect[e])))
            return "K of the cell at " + describe(g) + ": layer " + std::to_string(l) +
                   " element " + std::to_string(e) + " is " + std::to_string(x) +
                   ", RoPE of the raw key gives " + std::to_string(expect[e]) + "\n";
        }
      }
    }
    return {};
  }

  /// Token t's rows for layer l: values in [-1, 1) from the op's data seed.
  void token_values(std::uint64_t seed, std::size_t t, std::size_t l, std::vector<float>& k,
                    std::vector<float>& v) const {
    mnemo_test::rng g{seed ^ ((t * 64 + l + 1) * 0xd1b54a32d192ed03ull)};
    k.resize(rc_.shape.n_head_kv * rc_.shape.d_k);
    v.resize(rc_.shape.n_head_kv * rc_.shape.d_v);
    for (auto& x : k) x = g.uniform();
    for (auto& x : v) x = g.uniform();
  }

  template <class E>
  static std::vector<std::uint8_t> encode(const std::vector<float>& x) {
    std::vector<E> row(row_bytes<E>(x.size()) / sizeof(E));
    mnemo_test::ref_encode(x.data(), row.data(), x.size());
    std::vector<std::uint8_t> b(row_bytes<E>(x.size()));
    std::memcpy(b.data(), row.data(), b.size());
    return b;
  }

  std::string decode(const op& o) {
    if (auto e = same("update before decode", cache_->update(), ref_.update()); !e.empty())
      return e;
    const std::size_t n_ub = o.ub_sizes.size();
    std::vector<std::vector<pos_t>> pos(n_ub);
    std::vector<std::vector<seq_set>> sets(n_ub);
    std::vector<std::vector<ref_token>> tokens(n_ub);
    std::vector<memory::ubatch_tokens> ubs(n_ub);
    std::vector<float> k, v;
    for (std::size_t u = 0, t = 0; u < n_ub; ++u) {
      for (std::size_t j = 0; j < o.ub_sizes[u]; ++j, ++t) {
        pos[u].push_back(o.pos[t]);
        seq_set s;
        for (seq_id x : o.seqs[t]) s.insert(x);
        sets[u].push_back(s);
        ref_token tok{o.pos[t], std::set<seq_id>(o.seqs[t].begin(), o.seqs[t].end()), {}};
        for (std::size_t l = 0; l < rc_.shape.n_layer; ++l) {
          token_values(o.data_seed, t, l, k, v);
          tok.rows.k.push_back(encode<KE>(k));
          tok.rows.v.push_back(encode<VE>(v));
          tok.rows.k_raw.push_back(k);
        }
        tokens[u].push_back(std::move(tok));
      }
      ubs[u] = {pos[u], sets[u]};
    }
    const status_code want = ref_.prepare(tokens);
    if (auto e = same("prepare", cache_->prepare(ubs), want); !e.empty() || want != status_code::ok)
      return e;
    for (std::size_t u = 0, t0 = 0; u < o.n_apply && u < n_ub; t0 += o.ub_sizes[u], ++u) {
      if (auto e = same("apply", cache_->apply(u, ubs[u]), ref_.apply(u, tokens[u])); !e.empty())
        return e;
      for (std::size_t j = 0; j < o.ub_sizes[u]; ++j)
        for (std::size_t l = 0; l < rc_.shape.n_layer; ++l) {
          token_values(o.data_seed, t0 + j, l, k, v);
          cache_->write_kv(l, u, j, k.data(), v.data());
        }
      if (auto e = check(); !e.empty())
        return "after applying micro-batch " + std::to_string(u) + ": " + e;
    }
    if (o.reapply < o.n_apply && o.reapply < n_ub) {  // a micro-batch applied twice
      const std::size_t u = o.reapply;
      if (auto e = same("apply again", cache_->apply(u, ubs[u]), ref_.apply(u, tokens[u]));
          !e.empty())
        return e;
    }
    if (!o.intruder.empty()) {
      if (auto e = execute(o.intruder[0]); !e.empty()) return "while the batch is open: " + e;
      if (auto e = check(); !e.empty()) return "after the refused operation: " + e;
    }
    if (o.commit) {
      cache_->commit();
      ref_.commit();
    } else {
      cache_->rollback();
      ref_.rollback();
    }
    return {};
  }

  /// Also checks the blob against the format: exact size and header fields.
  std::string state_write(const op& o) {
    ref_blob model;
    const status_code want = ref_.state_write(o.a, model);
    auto got = memory::state_write(*cache_, o.a);
    if (auto e = same("state_write", got.is_ok() ? status{} : got.error(), want); !e.empty())
      return e;
    if (!got.is_ok()) return {};
    std::vector<std::uint8_t> bytes = std::move(got).value();
    const std::size_t n_values_k = rc_.shape.n_head_kv * rc_.shape.d_k,
                      n_values_v = rc_.shape.n_head_kv * rc_.shape.d_v;
    std::size_t expect = k_header_bytes + 4;
    for (const auto& c : model.cells) expect += 8 + 4 * c.seqs.size();
    expect += rc_.shape.n_layer * model.cells.size() *
              (row_bytes<KE>(n_values_k) + row_bytes<VE>(n_values_v));
    std::ostringstream e;
    if (bytes.size() != expect)
      e << "state_write(" << o.a << ") wrote " << bytes.size() << " bytes, the format says "
        << expect << "\n";
    else if (read_le<std::uint32_t>(bytes, 0) != 0x534d4e4du ||
             read_le<std::uint16_t>(bytes, 4) != 2 || read_le<std::uint16_t>(bytes, 6) != 1 ||
             read_le<std::int32_t>(bytes, 8) != o.a ||
             read_le<std::uint32_t>(bytes, 12) != rc_.shape.n_layer ||
             read_le<std::uint32_t>(bytes, 16) != rc_.shape.n_head_kv ||
             read_le<std::uint32_t>(bytes, 20) != rc_.shape.d_k ||
             read_le<std::uint32_t>(bytes, 24) != rc_.shape.d_v ||
             read_le<std::uint32_t>(bytes, 28) != ggml_id<KE>() ||
             read_le<std::uint32_t>(bytes, 32) != ggml_id<VE>() ||
             bytes[36] != static_cast<std::uint8_t>(rc_.rope.kind) ||
             read_le<std::uint32_t>(bytes, 52) != 1 || read_le<std::uint64_t>(bytes, 56) != 0 ||
             read_le<std::uint64_t>(bytes, 64) != bytes.size() - k_header_bytes ||
             read_le<std::uint32_t>(bytes, k_header_bytes) != model.cells.size())
      e << "state_write(" << o.a << "): a header field or the cell count is wrong\n";
    blobs_[o.slot] = saved_blob{std::move(bytes), std::move(model)};
    return e.str();
  }

  std::string state_read(const op& o) {
    if (!blobs_[o.slot]) return {};  // a replay without the write: nothing to read
    const saved_blob& b = *blobs_[o.slot];
    std::vector<std::uint8_t> bytes = b.bytes;
    if (o.damage == blob_damage::flip) {
      const std::size_t at = o.damage_at % bytes.size();
      bytes[at] ^= static_cast<std::uint8_t>(1u + o.damage_at % 255u);
    } else if (o.damage == blob_damage::truncate) {
      bytes.resize(o.damage_at % bytes.size());
    }
    const status got = memory::state_read(*cache_, bytes, o.a);
    if (o.damage != blob_damage::none) {
      if (got.is_ok()) return "state_read of a damaged blob succeeded\n";
      ++coverage::get().damaged_reads;
      return {};  // and nothing changed: check() follows
    }
    return same("state_read", got, ref_.state_read(b.model, o.a));
  }

  run_config rc_;
  std::optional<memory::full_cache<KE, VE>> cache_;
  reference_cache ref_;
  std::optional<saved_blob> blobs_[k_slots];
  std::string error_;
};

// ------------------------------------------------------------------------ the generator

/// Draws the next operation from the model's state (positions continue each sequence,
/// ranges land near the positions in use, blobs are read from filled slots).
template <class H>
class generator {
 public:
  explicit generator(std::uint64_t seed) : r_{{seed}} {}

  op next(const H& h) {
    const int w = r_.range(0, 99);
    if (w < 34) return decode(h);
    if (w < 43) return range_op(h, op_kind::seq_rm);
    if (w < 51) return range_op(h, op_kind::seq_cp);
    if (w < 54) return range_op(h, op_kind::seq_keep);
    if (w < 63) return range_op(h, op_kind::seq_add);
    if (w < 67) return range_op(h, op_kind::seq_div);
    if (w < 70) return make_op(op_kind::update);
    if (w < 75) return make_op(op_kind::defragment);
    if (w < 77) {
      op o = make_op(op_kind::clear);
      o.data = r_.chance(50);
      return o;
    }
    if (w < 86) return write_op(h);
    return read_op(h);
  }

 private:
  seq_id any_seq(const H& h, bool allow_all) {
    const seq_id n = h.ref().cfg().n_seq_max;
    if (r_.chance(5)) return r_.chance(50) ? n : -2;  // out of range
    if (allow_all && r_.chance(10)) return -1;
    return static_cast<seq_id>(r_.below(static_cast<std::size_t>(n)));
  }

  pos_t any_pos(const H& h) {
    pos_t m = 0;
    for (seq_id s = 0; s < h.ref().cfg().n_seq_max; ++s) m = std::max(m, h.ref().seq_pos_max(s));
    return static_cast<pos_t>(r_.range(-1, m + 2));
  }

  op range_op(const H& h, op_kind k) {
    op o = make_op(k);
    o.a = any_seq(h, k == op_kind::seq_rm);
    o.b = any_seq(h, false);
    o.p0 = any_pos(h);
    o.p1 = r_.chance(30) ? -1 : any_pos(h);
    o.delta = r_.chance(15) ? -any_pos(h) - 1 : r_.range(-8, 8);
    o.divisor = r_.range(0, 4);
    return o;
  }

  op write_op(const H& h) {
    op o = make_op(op_kind::state_write);
    o.slot = r_.below(k_slots);
    o.a = r_.chance(40) ? -1 : any_seq(h, false);
    return o;
  }

  op read_op(const H& h) {
    std::vector<std::size_t> filled;
    for (std::size_t s = 0; s < k_slots; ++s)
      if (h.slot_filled(s)) filled.push_back(s);
    if (filled.empty()) return write_op(h);
    op o = make_op(op_kind::state_read);
    o.slot = filled[r_.below(filled.size())];
    const bool whole = h.slot_seq(o.slot) < 0;
    o.a =
        whole ? (r_.chance(85) ? -1 : any_seq(h, false)) : (r_.chance(85) ? any_seq(h, false) : -1);
    const int d = r_.range(0, 99);
    o.damage = d < 8 ? blob_damage::flip : d < 12 ? blob_damage::truncate : blob_damage::none;
    o.damage_at = r_.g.next();
    return o;
  }

  op decode(const H& h) {
    const auto& ref = h.ref();
    const seq_id n_seq = ref.cfg().n_seq_max;
    const std::size_t free = ref.free_cells();
    std::size_t n;
    const int w = r_.range(0, 99);
    if (w < 12)
      n = free + 1 + r_.below(4);  // must not fit
    else if (w < 22 && free > 0 && free <= 24)
      n = free;  // exactly fills the cache
    else
      n = free > 0 ? 1 + r_.below(std::min<std::size_t>(free, 10)) : 1 + r_.below(3);
    op o = make_op(op_kind::decode);
    std::vector<pos_t> next(static_cast<std::size_t>(n_seq));
    for (seq_id s = 0; s < n_seq; ++s) next[static_cast<std::size_t>(s)] = ref.seq_pos_max(s) + 1;
    for (std::size_t t = 0; t < n; ++t) {
      std::vector<seq_id> set;
      if (n_seq >= 2 && r_.chance(15)) {  // a token of several sequences
        for (seq_id s = 0; s < n_seq; ++s)
          if (r_.chance(50)) set.push_back(s);
        while (set.size() < 2) {
          const seq_id s = static_cast<seq_id>(r_.below(static_cast<std::size_t>(n_seq)));
          if (std::find(set.begin(), set.end(), s) == set.end())
            set.insert(std::upper_bound(set.begin(), set.end(), s), s);
        }
      } else {
        set.push_back(static_cast<seq_id>(r_.below(static_cast<std::size_t>(n_seq))));
      }
      pos_t p = 0;
      for (seq_id s : set) p = std::max(p, next[static_cast<std::size_t>(s)]);
      for (seq_id s : set) next[static_cast<std::size_t>(s)] = p + 1;
      o.pos.push_back(p);
      o.seqs.push_back(std::move(set));
    }
    if (r_.chance(4)) {  // a token the memory must refuse: negative position, no or a bad sequence
      const std::size_t t = r_.below(n);
      const int k = r_.range(0, 2);
      if (k == 0) o.pos[t] = -1 - r_.range(0, 2);
      if (k == 1) o.seqs[t].clear();
      if (k == 2) o.seqs[t].push_back(n_seq);
    }
    // Random split into 1..4 non-empty micro-batches, sometimes with an empty one.
    std::size_t parts = 1 + r_.below(std::min<std::size_t>(n, 4));
    std::vector<std::size_t> cuts{0, n};
    while (cuts.size() < parts + 1) {
      const std::size_t c = 1 + r_.below(n - 1);
      if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
    }
    if (r_.chance(5)) {
      cuts.push_back(cuts[r_.below(cuts.size())]);
      ++parts;
    }
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) o.ub_sizes.push_back(cuts[i + 1] - cuts[i]);
    const int e = r_.range(0, 99);
    o.n_apply = parts;
    if (e >= 70 && e < 82) {  // applied in part or whole, then rolled back
      o.n_apply = r_.below(parts + 1);
      o.commit = false;
    } else if (e >= 82 && e < 88) {  // a failure after some micro-batches, kept
      o.n_apply = r_.below(parts);
    } else if (e >= 88) {  // a sequence operation while the batch is prepared or open
      o.n_apply = r_.below(parts + 1);
      o.commit = r_.chance(50);
      static constexpr op_kind kinds[] = {
          op_kind::seq_rm,  op_kind::seq_cp,      op_kind::seq_keep,
          op_kind::seq_add, op_kind::seq_div,     op_kind::defragment,
          op_kind::update,  op_kind::state_write, op_kind::state_read};
      const op_kind k = kinds[r_.below(std::size(kinds))];
      o.intruder.push_back(k == op_kind::state_write                          ? write_op(h)
                           : k == op_kind::state_read                         ? read_op(h)
                           : k == op_kind::defragment || k == op_kind::update ? make_op(k)
                                                                              : range_op(h, k));
    }
    if (o.n_apply > 0 && r_.chance(5)) o.reapply = r_.below(o.n_apply);
    o.data_seed = r_.g.next();
    return o;
  }

  rand_gen r_;
};

// ------------------------------------------------------------------------ runs

/// What is running, for a crash (an invariant abort or a fault) to print: the seed,
/// the step and the operation. Formatted before each step; the handler only write()s.
char g_crash_note[1024];

extern "C" void print_crash_note(int sig) {
  const std::size_t n = std::strlen(g_crash_note);
  if (n > 0 && ::write(2, g_crash_note, n) < 0) {
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_note() {
  static const bool once = [] {
    std::signal(SIGABRT, print_crash_note);
    std::signal(SIGSEGV, print_crash_note);
    return true;
  }();
  (void)once;
}

struct outcome {
  std::size_t failed_at = SIZE_MAX;  // index of the failing step
  std::string message;
  std::vector<op> ops;
  bool failed() const { return failed_at != SIZE_MAX; }
};

template <class KE, class VE>
outcome run_seed(std::uint64_t seed, std::size_t steps, bool rope,
                 ref_mutation m = ref_mutation::none) {
  using H = harness<KE, VE>;
  outcome out;
  H h(run_config::draw(seed, rope), m);
  if (!h.error().empty()) {
    out.failed_at = 0;
    out.message = h.error();
    return out;
  }
  generator<H> gen(seed);
  install_crash_note();
  for (std::size_t i = 0; i < steps; ++i) {
    out.ops.push_back(gen.next(h));
    std::snprintf(g_crash_note, sizeof g_crash_note,
                  "\nmodel-based test crashed: seed %llu (MNEMO_MODEL_SEED=%llu), step %zu: %s\n",
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), i,
                  out.ops.back().describe().c_str());
    std::string e = h.execute(out.ops.back());
    if (e.empty()) e = h.check();
    if (!e.empty()) {
      out.failed_at = i;
      out.message = std::move(e);
      break;
    }
  }
  g_crash_note[0] = '\0';
  return out;
}

/// Runs a concrete list of operations; "" when every check passed.
template <class KE, class VE>
std::string replay(const run_config& rc, const std::vector<op>& ops, ref_mutation m) {
  harness<KE, VE> h(rc, m);
  if (!h.error().empty()) return h.error();
  for (const auto& o : ops) {
    std::string e = h.execute(o);
    if (e.empty()) e = h.check();
    if (!e.empty()) return e;
  }
  return {};
}

/// The failure report: seed, configuration, shortest failing prefix, reduced list.
template <class KE, class VE>
std::string explain(std::uint64_t seed, std::size_t steps, bool rope, const outcome& first,
                    ref_mutation m = ref_mutation::none) {
  // The shortest failing prefix: fewer steps until the seed passes.
  std::size_t k = first.failed_at + 1;
  outcome shortest = first;
  while (k > 1) {
    outcome o = run_seed<KE, VE>(seed, k - 1, rope, m);
    if (!o.failed()) break;
    shortest = std::move(o);
    k = shortest.failed_at + 1;
  }
  std::vector<op> prefix(shortest.ops.begin(),
                         shortest.ops.begin() + static_cast<std::ptrdiff_t>(k));
  // Then drop every operation the failure does not need (the last one stays).
  const run_config rc = run_config::draw(seed, rope);
  std::vector<op> reduced = prefix;
  for (std::size_t i = reduced.size() - 1; i-- > 0;) {
    std::vector<op> trial = reduced;
    trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(i));
    if (!replay<KE, VE>(rc, trial, m).empty()) reduced = std::move(trial);
  }
  std::ostringstream o;
  o << "seed " << seed << " (rerun with MNEMO_MODEL_SEED=" << seed << "), " << steps
    << " steps; cache " << rc.describe() << "\nfailed at step " << k - 1 << ": " << shortest.message
    << "shortest failing prefix (" << k << " operations):\n";
  for (std::size_t i = 0; i < prefix.size(); ++i)
    o << "  " << i << ": " << prefix[i].describe() << "\n";
  if (reduced.size() < prefix.size()) {
    o << "reduced to " << reduced.size() << " operations (" << replay<KE, VE>(rc, reduced, m)
      << "):\n";
    for (const auto& r : reduced) o << "  " << r.describe() << "\n";
  }
  return o.str();
}

// ------------------------------------------------------------------------ typed suite

template <class K, class V, bool Rope>
struct kv_types {
  using k_element = K;
  using v_element = V;
  static constexpr bool rope = Rope;
};
// Exact bytes with RoPE none; the RoPE sweep uses f32 K (rotated keys within a tolerance).
using F32 = kv_types<float, float, false>;
using F16 = kv_types<dtype::f16, dtype::f16, false>;
using Q8 = kv_types<dtype::block_q8_0, dtype::block_q8_0, false>;
using F16Q4 = kv_types<dtype::f16, dtype::block_q4_0, false>;
using RopeF32 = kv_types<float, dtype::f16, true>;

struct kv_names {
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, F32>) return "F32";
    if (std::is_same_v<T, F16>) return "F16";
    if (std::is_same_v<T, Q8>) return "Q8";
    if (std::is_same_v<T, F16Q4>) return "F16Q4";
    return "RopeF32";
  }
};

template <class T>
class FullCacheModel : public ::testing::Test {};
using KvTypes = ::testing::Types<F32, F16, Q8, F16Q4, RopeF32>;
TYPED_TEST_SUITE(FullCacheModel, KvTypes, kv_names);

TYPED_TEST(FullCacheModel, RandomOperationsMatchTheModel) {
  using KE = typename TypeParam::k_element;
  using VE = typename TypeParam::v_element;
  constexpr bool rope = TypeParam::rope;
  const std::size_t steps = env_or("MNEMO_MODEL_STEPS", 100 / k_slow_divisor);
  const std::size_t n_seeds = env_or("MNEMO_MODEL_SEEDS", rope ? 120 : 200);
  std::vector<std::uint64_t> seeds;
  if (const char* s = std::getenv("MNEMO_MODEL_SEED")) {
    seeds.push_back(std::strtoull(s, nullptr, 0));
  } else {
    const std::uint64_t base = rope ? 500000 : 100000 * (1 + ggml_id<KE>() + 10 * ggml_id<VE>());
    for (std::size_t i = 0; i < n_seeds; ++i) seeds.push_back(base + i);
  }
  int failures = 0;
  for (std::uint64_t seed : seeds) {
    const outcome o = run_seed<KE, VE>(seed, steps, rope);
    if (!o.failed()) continue;
    ADD_FAILURE() << explain<KE, VE>(seed, steps, rope, o);
    if (++failures == 3) break;  // the first few are enough to debug
  }
  if (env_or("MNEMO_MODEL_STATS", 0)) {
    coverage::get().print();
    coverage::get() = {};
  }
}

// ------------------------------------------------------------------------ the test can fail

/// A model with one of llama.cpp's behaviours must be caught, and the report must give
/// the shortest prefix, reduced to a few operations that end in the culprit.
void expect_caught(ref_mutation m, op_kind culprit) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const outcome o = run_seed<float, float>(seed, 60, false, m);
    if (!o.failed()) continue;
    EXPECT_EQ(o.ops.back().kind, culprit) << o.ops.back().describe();
    const std::string report = explain<float, float>(seed, 60, false, o, m);
    EXPECT_NE(
        report.find("shortest failing prefix (" + std::to_string(o.failed_at + 1) + " operations)"),
        std::string::npos)
        << report;
    EXPECT_NE(report.find("reduced to "), std::string::npos) << report;
    return;
  }
  ADD_FAILURE() << "200 seeds never told the cache from a model with a llama.cpp behaviour";
}

TEST(FullCacheModelSelfCheck, CatchesSeqCpThatKeepsDestinationCells) {
  expect_caught(ref_mutation::seq_cp_keeps_dst, op_kind::seq_cp);
}

TEST(FullCacheModelSelfCheck, CatchesShiftsThatMoveSharedCells) {
  // The culprit is the shift itself, or a decode inside which the shift shows.
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const outcome o = run_seed<float, float>(seed, 60, false, ref_mutation::shift_moves_shared);
    if (!o.failed()) continue;
    const op_kind k = o.ops.back().kind;
    EXPECT_TRUE(k == op_kind::seq_add || k == op_kind::seq_div) << o.ops.back().describe();
    return;
  }
  ADD_FAILURE() << "200 seeds never told the cache from a model that shifts shared cells";
}

}  // namespace
