// Randomized differential test of memory::split_stream against memory::full_cache
// (the unified strategy, itself checked against the brute-force model of
// model_based_test.cpp): the same random operations run on both, and after every
// step each sequence must hold the same multiset of (position, pending shift, K
// bytes, V bytes) in both, with the same pos_min / pos_max, and attention of every
// sequence over its split stream must equal attention over the full cache.
//
// Operations: decodes over several streams in random micro-batches, applied in part
// and then committed or rolled back (the split memory must then be exactly as before,
// block tables and reference counts included), coupled tokens and unknown sequences
// (refused with their status, nothing changed), seq_rm / seq_cp (partial ranges too)
// / seq_keep / seq_add / seq_div, update, defragment, clear, whole and per-sequence
// state round trips, damaged states. Small blocks (1-5 cells) and sometimes a short
// block pool make copy-on-write and pool exhaustion frequent. A split refusal for
// room (no_space) is checked to change nothing and is not run on the full cache
// (which has room for all streams); every other status must agree.
// MNEMO_SPLIT_SEED=n runs seed n only; a failure prints seed, step and configuration.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/slow_build.hpp"
#include "memory/harness.hpp"
#include <gtest/gtest.h>

#include "mnemo/attention/attention.hpp"
#include "mnemo/memory/memory.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;

struct rng {
  std::uint64_t s;
  std::uint64_t next() { return s = mix64(s); }
  int range(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int pct) { return range(0, 99) < pct; }
};

template <class KE, class VE>
class differential {
 public:
  using split_t = memory::split_stream<KE, VE>;
  using full_t = memory::full_cache<KE, VE>;

  explicit differential(std::uint64_t seed) : r_{seed * 0x9e3779b97f4a7c15ull + 7} {
    memory::split_stream_config sc;
    sc.shape = {static_cast<std::size_t>(r_.range(1, 2)), static_cast<std::size_t>(r_.range(1, 2)),
                32, 32};
    sc.n_seq_max = r_.range(1, 4);
    sc.size_per_stream = static_cast<std::size_t>(r_.range(6, 20));
    sc.block_cells = static_cast<std::size_t>(r_.range(1, 5));
    if (r_.chance(30))
      sc.pool_blocks = static_cast<std::size_t>(
          r_.range(1, static_cast<int>(sc.blocks_per_stream() * sc.n_seq_max)));
    sc.rope.layout = attention::rope_layout::none;
    if (r_.chance(60)) {
      sc.rope.layout = attention::rope_layout::normal;
      sc.rope.n_rot = 32;
    }
    sc.shift_supported = !r_.chance(10);
    memory::full_cache_config fc;
    fc.shape = sc.shape;
    fc.size = sc.size_per_stream * static_cast<std::size_t>(sc.n_seq_max);
    fc.n_seq_max = sc.n_seq_max;
    fc.rope = sc.rope;
    fc.shift_supported = sc.shift_supported;
    split_.emplace(std::move(split_t::make(sc)).value());
    full_.emplace(std::move(full_t::make(fc)).value());
    std::ostringstream o;
    o << "streams " << sc.n_seq_max << " x " << sc.size_per_stream << " cells, blocks of "
      << sc.block_cells << ", pool " << split_->pool().n_blocks() << ", layers " << sc.shape.n_layer
      << ", heads " << sc.shape.n_head_kv << ", rope "
      << (sc.rope.layout == attention::rope_layout::none ? "none" : "normal")
      << (sc.shift_supported ? "" : ", no K-shift");
    describe_ = o.str();
  }

  const std::string& describe() const { return describe_; }

  /// One random operation; "" or what went wrong.
  std::string step() {
    const int w = r_.range(0, 99);
    const seq_id n = split_->config().n_seq_max;
    const seq_id a = r_.chance(4) ? n : static_cast<seq_id>(r_.range(0, n - 1));
    const seq_id b = static_cast<seq_id>(r_.range(0, n - 1));
    const pos_t p0 = r_.range(-1, 12), p1 = r_.chance(30) ? -1 : r_.range(0, 16);
    last_ = "";
    if (w < 40) return decode();
    if (w < 50) {
      const seq_id x = r_.chance(10) ? -1 : a;  // drawn once: the lambda runs twice
      return both("seq_rm", [&](auto& c) { return c.seq_rm(x, p0, p1); });
    }
    if (w < 62) return both("seq_cp", [&](auto& c) { return c.seq_cp(a, b, p0, p1); });
    if (w < 65) return both("seq_keep", [&](auto& c) { return c.seq_keep(a); });
    if (w < 74) {
      const pos_t d = r_.range(-4, 4);
      return both("seq_add", [&](auto& c) { return c.seq_add(a, p0, p1, d); });
    }
    if (w < 78) {
      const int d = r_.range(1, 3);
      return both("seq_div", [&](auto& c) { return c.seq_div(a, p0, p1, d); });
    }
    if (w < 82) return both("update", [&](auto& c) { return c.update(); });
    if (w < 87) return both("defragment", [&](auto& c) { return c.defragment(); });
    if (w < 88) {
      const bool data = r_.chance(50);
      split_->clear(data);
      full_->clear(data);
      return {};
    }
    return state(a < n ? a : b, b);
  }

  /// Every sequence's content, and the split memory's own invariants.
  std::string check() const {
    const auto& sp = *split_;
    for (seq_id s = -1; s <= sp.config().n_seq_max; ++s)
      if (sp.seq_pos_min(s) != full_->seq_pos_min(s) || sp.seq_pos_max(s) != full_->seq_pos_max(s))
        return "seq " + std::to_string(s) + ": pos_min/max differ from the full cache";
    for (seq_id s = 0; s < sp.config().n_seq_max; ++s)
      if (content_split(s) != content_full(s))
        return "seq " + std::to_string(s) + ": cells (pos, shift, K, V) differ from the full cache";
    // Reference counts are the references of the block tables; used cells have blocks.
    std::vector<std::uint32_t> refs(sp.pool().n_blocks(), 0);
    std::size_t free = 0;
    for (seq_id s = 0; s < sp.config().n_seq_max; ++s) {
      const auto& st = sp.stream_of(s);
      for (auto blk : st.blocks)
        if (blk >= 0) ++refs[static_cast<std::size_t>(blk)];
      for (std::size_t i = 0; i < st.cells.size(); ++i)
        if (!st.cells.empty(i) && st.blocks[i / sp.config().block_cells] < 0)
          return "seq " + std::to_string(s) + ": used cell " + std::to_string(i) + " has no block";
    }
    for (std::size_t blk = 0; blk < refs.size(); ++blk) {
      if (refs[blk] != sp.pool().refs(static_cast<memory::block_id>(blk)))
        return "block " + std::to_string(blk) + ": reference count is stale";
      free += refs[blk] == 0;
    }
    if (free != sp.pool().n_free()) return "the pool's free count is stale";
    return attention_check();
  }

  const std::string& last() const { return last_; }

 private:
  using cell_t = std::tuple<pos_t, pos_t, std::vector<std::uint8_t>, std::vector<std::uint8_t>>;

  template <class Kv>
  void rows(const Kv& kv, std::size_t cell, std::vector<std::uint8_t>& k,
            std::vector<std::uint8_t>& v) const {
    for (std::size_t l = 0; l < kv.shape().n_layer; ++l) {
      const auto* pk = reinterpret_cast<const std::uint8_t*>(kv.k(l, cell));
      const auto* pv = reinterpret_cast<const std::uint8_t*>(kv.v(l, cell));
      k.insert(k.end(), pk, pk + kv.k_row_bytes());
      v.insert(v.end(), pv, pv + kv.v_row_bytes());
    }
  }

  std::vector<cell_t> content_split(seq_id s) const {
    std::vector<cell_t> r;
    const auto& cells = split_->stream_of(s).cells;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells.empty(i)) continue;
      cell_t c{cells.pos(i), cells.shift(i), {}, {}};
      rows(split_->pool().kv(), split_->storage_cell(s, i), std::get<2>(c), std::get<3>(c));
      r.push_back(std::move(c));
    }
    std::sort(r.begin(), r.end());
    return r;
  }

  std::vector<cell_t> content_full(seq_id s) const {
    std::vector<cell_t> r;
    const auto& cells = full_->cells();
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (cells.empty(i) || !cells.owners(i).contains(s)) continue;
      cell_t c{cells.pos(i), cells.shift(i), {}, {}};
      rows(full_->storage(), i, std::get<2>(c), std::get<3>(c));
      r.push_back(std::move(c));
    }
    std::sort(r.begin(), r.end());
    return r;
  }

  /// One query per sequence at pos_max + 1: the fast kernel over the split streams
  /// (one call) against the reference kernel over the full cache.
  std::string attention_check() const {
    const auto& sh = split_->config().shape;
    std::vector<seq_id> seqs;
    std::vector<pos_t> pos;
    for (seq_id s = 0; s < split_->config().n_seq_max; ++s)
      if (split_->seq_pos_max(s) >= 0) {
        seqs.push_back(s);
        pos.push_back(split_->seq_pos_max(s) + 1);
      }
    if (seqs.empty()) return {};
    std::vector<attention::kv_segment> segs;
    std::vector<std::size_t> first;
    for (seq_id s : seqs) {
      first.push_back(segs.size());
      split_->stream_segments(0, s, segs);
    }
    first.push_back(segs.size());
    std::vector<attention::kv_view> views;
    std::vector<std::uint32_t> stream;
    for (std::size_t k = 0; k < seqs.size(); ++k) {
      views.push_back({std::span<const attention::kv_segment>(segs).subspan(
          first[k], first[k + 1] - first[k])});
      stream.push_back(static_cast<std::uint32_t>(k));
    }
    std::vector<float> q(seqs.size() * sh.n_head_kv * sh.d_k);
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = kv_value(k_seed, 7, 0, 0, 0, i);
    const attention::shape ash{sh.n_head_kv, sh.n_head_kv, sh.d_k, sh.d_v};
    std::vector<float> got(seqs.size() * sh.n_head_kv * sh.d_v), want(got.size());
    const attention::query_batch qs{q.data(), seqs.size(), pos.data(), seqs.data(), stream.data()};
    const attention::query_batch qf{q.data(), seqs.size(), pos.data(), seqs.data(), nullptr};
    const attention::kv_segment fseg = full_->segment(0);
    const attention::kv_view fview{{&fseg, 1}};
    if (auto st = attention::attend<simd::native, KE, VE>(ash, {}, qs, views, got.data()); !st)
      return "attend over the split streams: " + st.to_string();
    if (auto st = attention::reference_attend<KE, VE>(ash, {}, qf, {&fview, 1}, want.data()); !st)
      return "reference attend over the full cache: " + st.to_string();
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(std::abs(got[i] - want[i]) <= 1e-4f))
        return "attention element " + std::to_string(i) + ": split " + std::to_string(got[i]) +
               ", full " + std::to_string(want[i]);
    return {};
  }

  /// Runs op on the split memory; no_space must change nothing and is not run on the
  /// full cache; any other status must be the full cache's too.
  template <class Op>
  std::string both(const char* what, Op op) {
    const auto before = snapshot_split();
    const status s = op(*split_);
    last_ = std::string(what) + " -> " + s.to_string();
    if (s.code() == status_code::no_space) {
      if (snapshot_split() != before) return std::string(what) + ": refused but changed the memory";
      return {};
    }
    const status f = op(*full_);
    if (s.code() != f.code())
      return std::string(what) + ": split says \"" + s.to_string() + "\", full says \"" +
             f.to_string() + "\"";
    if (!s && snapshot_split() != before)
      return std::string(what) + ": refused but changed the memory";
    return {};
  }

  std::vector<std::uint8_t> snapshot_split() const {
    std::vector<std::uint8_t> r;
    auto put = [&](const auto& x) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(&x);
      r.insert(r.end(), p, p + sizeof x);
    };
    // Block ids by first reference (a whole restore renumbers them), then refs.
    std::vector<memory::block_id> order;
    for (seq_id s = 0; s < split_->config().n_seq_max; ++s)
      for (auto blk : split_->stream_of(s).blocks)
        if (blk >= 0 && std::find(order.begin(), order.end(), blk) == order.end())
          order.push_back(blk);
    for (auto blk : order) put(split_->pool().refs(blk));
    put(split_->pool().n_free());
    for (seq_id s = 0; s < split_->config().n_seq_max; ++s) {
      const auto& st = split_->stream_of(s);
      for (auto blk : st.blocks)
        put(blk < 0 ? -1
                    : static_cast<int>(std::find(order.begin(), order.end(), blk) - order.begin()));
      for (std::size_t i = 0; i < st.cells.size(); ++i) {
        put(st.cells.pos(i));
        put(st.cells.shift(i));
      }
      for (const auto& c : content_split(s)) {
        r.insert(r.end(), std::get<2>(c).begin(), std::get<2>(c).end());
        r.insert(r.end(), std::get<3>(c).begin(), std::get<3>(c).end());
      }
    }
    return r;
  }

  std::string decode() {
    const seq_id n = split_->config().n_seq_max;
    std::vector<token> toks;
    std::vector<pos_t> next(static_cast<std::size_t>(n));
    for (seq_id s = 0; s < n; ++s) next[static_cast<std::size_t>(s)] = split_->seq_pos_max(s) + 1;
    const int count = r_.range(1, 8);
    for (int t = 0; t < count; ++t) {
      const seq_id s = static_cast<seq_id>(r_.range(0, n - 1));
      toks.push_back(at(s, next[static_cast<std::size_t>(s)]++));
    }
    const bool bad = r_.chance(6);  // a coupled token or an unknown sequence
    if (bad && n > 1 && r_.chance(50)) {
      toks.back().seqs.insert((first_seq(toks.back().seqs) + 1) % n);
    } else if (bad) {
      toks.back().seqs = seq_set::of(n);
    }
    std::vector<std::vector<pos_t>> pos;
    std::vector<std::vector<seq_set>> sets;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (pos.empty() || r_.chance(35)) pos.emplace_back(), sets.emplace_back();
      pos.back().push_back(toks[i].pos);
      sets.back().push_back(toks[i].seqs);
    }
    std::vector<memory::ubatch_tokens> ubs;
    for (std::size_t u = 0; u < pos.size(); ++u) ubs.push_back({pos[u], sets[u]});
    const auto before = snapshot_split();
    const status s = split_->prepare(ubs);
    last_ = "decode of " + std::to_string(toks.size()) + " tokens -> " + s.to_string();
    if (bad) {
      const bool coupled = sets.back().back().count() > 1;
      const status_code want = coupled ? status_code::unsupported : status_code::out_of_range;
      if (s.code() != want) return "a bad token gave \"" + s.to_string() + "\"";
      return snapshot_split() == before ? "" : "a refused batch changed the memory";
    }
    if (!s) {
      if (s.code() != status_code::no_space) return "prepare: " + s.to_string();
      return snapshot_split() == before ? "" : "a refused batch changed the memory";
    }
    if (const status f = full_->prepare(ubs); !f) return "full cache prepare: " + f.to_string();
    const std::size_t n_apply = static_cast<std::size_t>(r_.range(0, static_cast<int>(ubs.size())));
    const bool commit = n_apply == ubs.size() && !r_.chance(15);
    const auto& sh = split_->config().shape;
    for (std::size_t u = 0; u < n_apply; ++u) {
      if (auto st = split_->apply(u, ubs[u]); !st) return "apply: " + st.to_string();
      if (auto st = full_->apply(u, ubs[u]); !st) return "full apply: " + st.to_string();
      for (std::size_t j = 0; j < ubs[u].size(); ++j)
        for (std::size_t l = 0; l < sh.n_layer; ++l) {
          const seq_id q = first_seq(sets[u][j]);
          auto k = raw_k(sh, l, q, pos[u][j], r_.s), v = raw_v(sh, l, q, pos[u][j], r_.s);
          split_->write_kv(l, u, j, k.data(), v.data());
          full_->write_kv(l, u, j, k.data(), v.data());
        }
      memory::layer_views lv;
      split_->views(0, u, lv);
      if (lv.token_stream.size() != ubs[u].size()) return "views: wrong token count";
    }
    if (commit) {
      split_->commit();
      full_->commit();
      return {};
    }
    split_->rollback();
    full_->rollback();
    return snapshot_split() == before ? "" : "rollback did not restore the memory exactly";
  }

  std::string state(seq_id s, seq_id dest) {
    if (r_.chance(40)) {                         // whole: write, clear, read back
      auto blob = memory::state_write(*split_);  // applies pending shifts
      auto fblob = memory::state_write(*full_);
      if (!blob.is_ok() || !fblob.is_ok()) return "whole state_write failed";
      const auto before = snapshot_split();
      if (r_.chance(30)) {
        auto bad = *blob;
        bad[static_cast<std::size_t>(r_.next() % bad.size())] ^= 0x24;
        if (memory::state_read(*split_, bad).is_ok()) return "a damaged state was read";
        return snapshot_split() == before ? "" : "a damaged state changed the memory";
      }
      split_->clear(r_.chance(50));
      full_->clear(false);
      if (auto st = memory::state_read(*split_, *blob); !st) return "whole read: " + st.to_string();
      if (auto st = memory::state_read(*full_, *fblob); !st)
        return "full whole read: " + st.to_string();
      return snapshot_split() == before ? "" : "whole round trip changed the memory";
    }
    auto blob = memory::state_write(*split_, s);
    auto fblob = memory::state_write(*full_, s);
    if (!blob.is_ok() || !fblob.is_ok()) return "state_write failed";
    last_ = "state of seq " + std::to_string(s) + " into seq " + std::to_string(dest);
    return both("state_read", [&](auto& c) {
      if constexpr (std::is_same_v<std::decay_t<decltype(c)>, split_t>)
        return memory::state_read(c, *blob, dest);
      else
        return memory::state_read(c, *fblob, dest);
    });
  }

  rng r_;
  std::optional<split_t> split_;
  std::optional<full_t> full_;
  std::string describe_, last_;
};

template <class T>
class SplitStreamModel : public ::testing::Test {};
struct f32_f32 {
  using k = float;
  using v = float;
};
struct f16_q80 {
  using k = dtype::f16;
  using v = dtype::block_q8_0;
};
struct pair_name {
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, f32_f32> ? "f32" : "f16q80";
  }
};
using Pairs = ::testing::Types<f32_f32, f16_q80>;
TYPED_TEST_SUITE(SplitStreamModel, Pairs, pair_name);

TYPED_TEST(SplitStreamModel, SameResultsAsTheUnifiedCache) {
  const char* only = std::getenv("MNEMO_SPLIT_SEED");
  const std::uint64_t lo = only ? std::strtoull(only, nullptr, 0) : 1;
  const std::uint64_t hi = only ? lo + 1 : 1 + mnemo_test::scaled_count(80, 4);
  for (std::uint64_t seed = lo; seed < hi; ++seed) {
    differential<typename TypeParam::k, typename TypeParam::v> d(seed);
    for (int step = 0; step < 150; ++step) {
      std::string e = d.step();
      if (e.empty()) e = d.check();
      ASSERT_TRUE(e.empty()) << "seed " << seed << " (MNEMO_SPLIT_SEED=" << seed << "), step "
                             << step << ", " << d.describe() << "\nlast: " << d.last() << "\n"
                             << e;
    }
  }
}

}  // namespace
