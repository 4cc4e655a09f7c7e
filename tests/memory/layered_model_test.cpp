// Randomized model-based test of the per-layer composite (layered.hpp) on the
// interleaved-SWA layout of a Gemma-3-style model (layers local, local, global, local,
// local, global), for layered<full_cache, sliding_window> and
// layered<split_stream, split_window>. The brute-force model is one full_cache for all
// six layers, big enough never to forget: a window only masks the local layers.
// Random batches (several sequences, sometimes coupled tokens) are validated and split
// the way the composite plans them (memory::plan_batch with its split_strategy); after
// every micro-batch random queries attend through both memories' views of every layer
// (attention::reference_attend, window mask on local layers) and must agree. Injected
// failures must leave every part byte for byte as it was; a refused operation (no
// space, lost context, coupled tokens for split streams) must change no part, and the
// model skips it; a lost-context refusal must agree with can_resume /
// earliest_restorable_pos. Sequence operations, clear and state round trips (whole and
// per sequence, into a fresh composite or in place, sometimes damaged) are mixed in.
// Every failure prints the seed, the step and the first difference.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/attention/attention.hpp"
#include "mnemo/batch/validate.hpp"
#include "mnemo/memory/memory.hpp"
//
#include "memory/harness.hpp"

namespace {

using namespace mnemo;
using namespace mnemo::memtest;
using attention::window_kind;
using full = memory::full_cache<float>;
using positions_t = std::vector<std::pair<pos_t, int>>;

struct rng {
  std::uint64_t s;
  std::uint64_t next() { return s = mix64(s); }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % std::uint64_t(hi - lo + 1)); }
  bool chance(int pct) { return range(0, 99) < pct; }
};

// ---- the layout and one seed's configuration ---------------------------------------

constexpr std::size_t k_layers = 6;
constexpr bool is_global(std::size_t l) { return l % 3 == 2; }
/// Model layer -> part: 0 global, 1 local.
std::vector<std::uint8_t> layer_map() {
  std::vector<std::uint8_t> m;
  for (std::size_t l = 0; l < k_layers; ++l) m.push_back(is_global(l) ? 0 : 1);
  return m;
}

struct config_draw {
  window_kind kind;
  pos_t n_swa;
  seq_id n_seq;
  std::size_t d;  // d_k = d_v; 2 KV heads
  bool causal_local;
  std::size_t global_cells, local_cells, block_cells, pool_blocks;
};

config_draw draw(window_kind kind, rng& r) {
  config_draw c{};
  c.kind = kind;
  c.n_swa = r.range(2, 6);
  c.n_seq = r.range(1, 4);
  c.d = static_cast<std::size_t>(4 * r.range(2, 4));
  c.causal_local = kind != window_kind::symmetric || r.chance(50);
  c.global_cells = r.chance(70) ? 256 : static_cast<std::size_t>(r.range(16, 48));
  c.local_cells = static_cast<std::size_t>(c.n_swa + r.range(2, 6));  // per sequence
  c.block_cells = static_cast<std::size_t>(4 << r.range(0, 2));
  c.pool_blocks = r.chance(70) ? 0 : static_cast<std::size_t>(r.range(2, 12));
  return c;
}

memory::kv_shape shape_of(const config_draw& c, std::size_t layers) {
  return {layers, 2, c.d, c.d};
}
attention::rope_config rope_of(const config_draw& c) {
  attention::rope_config r;
  r.layout = attention::rope_layout::normal;
  r.n_rot = c.d;
  return r;
}

// ---- snapshots of every part -------------------------------------------------------

/// One part: harness snapshots (one per stream) and bookkeeping words (horizons,
/// block tables, reference counts) that a snapshot does not hold.
struct part_snap {
  std::vector<snapshot> streams;
  std::vector<long long> extra;
};
using mem_snap = std::vector<part_snap>;

std::string diff(const mem_snap& a, const mem_snap& b) {
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (std::size_t j = 0; j < a[k].streams.size(); ++j)
      if (std::string d = first_difference(a[k].streams[j], b[k].streams[j]); !d.empty())
        return "part " + std::to_string(k) + " stream " + std::to_string(j) + ": " + d;
    const auto &x = a[k].extra, &y = b[k].extra;
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i)
      if (i >= x.size() || i >= y.size() || x[i] != y[i])
        return "part " + std::to_string(k) + ": bookkeeping word " + std::to_string(i) +
               " differs (horizons, blocks, references)";
  }
  return "";
}

/// Stream s of a split_stream as a harness snapshot (rows of empty cells read as 0).
template <class S>
snapshot stream_snap(const S& m, seq_id s) {
  snapshot r;
  const auto& st = m.stream_of(s);
  const auto& kv = m.pool().kv();
  for (std::size_t i = 0; i < st.cells.size(); ++i)
    r.cells.push_back({st.cells.pos(i), st.cells.owners(i), st.cells.shift(i)});
  r.has_shift = st.cells.has_shift();
  r.used = st.cells.used();
  r.seq_pos.push_back(st.cells.seq_positions(s));
  r.k_row = kv.k_row_bytes();
  r.v_row = kv.v_row_bytes();
  for (std::size_t l = 0; l < m.config().shape.n_layer; ++l)
    for (std::size_t i = 0; i < st.cells.size(); ++i) {
      const bool live = !st.cells.empty(i);
      const auto* k =
          live ? reinterpret_cast<const std::uint8_t*>(kv.k(l, m.storage_cell(s, i))) : nullptr;
      const auto* v =
          live ? reinterpret_cast<const std::uint8_t*>(kv.v(l, m.storage_cell(s, i))) : nullptr;
      for (std::size_t b = 0; b < r.k_row; ++b) r.k.push_back(live ? k[b] : 0);
      for (std::size_t b = 0; b < r.v_row; ++b) r.v.push_back(live ? v[b] : 0);
    }
  return r;
}

/// The local layers' window over `size` cells for `n_seq_max` sequences (the unified
/// window holds all of them, a split_window stream one).
memory::sliding_window_config window_of(const config_draw& c, seq_id n_seq_max, std::size_t size) {
  memory::sliding_window_config w;
  w.shape = shape_of(c, 4);
  w.n_ctx = 1 << 20;
  w.n_seq_max = n_seq_max;
  w.window = c.kind;
  w.n_swa = c.n_swa;
  w.size = size;
  w.rope = rope_of(c);
  return w;
}

/// layered<Global, Local> over parts made from their configs (the draws are valid).
template <class Global, class Local, class GlobalConfig, class LocalConfig>
memory::layered<Global, Local> compose(const GlobalConfig& g, const LocalConfig& w) {
  return std::move(memory::layered<Global, Local>::make(layer_map(),
                                                        std::move(Global::make(g)).value(),
                                                        std::move(Local::make(w)).value()))
      .value();
}

// ---- the two compositions ------------------------------------------------------------

struct unified_parts {
  using global_part = memory::full_cache<float>;
  using local_part = memory::sliding_window<float>;
  using mem = memory::layered<global_part, local_part>;
  static constexpr bool refuses_coupled = false;

  static mem make(const config_draw& c) {
    memory::full_cache_config g;
    g.shape = shape_of(c, 2);
    g.size = c.global_cells;
    g.n_seq_max = c.n_seq;
    g.rope = rope_of(c);
    return compose<global_part, local_part>(
        g, window_of(c, c.n_seq, c.local_cells * static_cast<std::size_t>(c.n_seq)));
  }
  static mem_snap snaps(const mem& m) {
    part_snap w{{snap(m.part<1>(), live_rows)}, {}};
    for (seq_id s = 0; s < m.part<1>().config().n_seq_max; ++s)
      w.extra.push_back(m.part<1>().horizon(s));
    return {{{snap(m.part<0>(), live_rows)}, {}}, w};
  }
  static positions_t global_positions(const mem& m, seq_id s) {
    return m.part<0>().cells().seq_positions(s);
  }
  static positions_t local_positions(const mem& m, seq_id s) {
    return m.part<1>().cells().seq_positions(s);
  }
  static pos_t horizon(const mem& m, seq_id s) { return m.part<1>().horizon(s); }
  static std::string invariants(const mem& m) {
    std::string e = check_invariants(m.part<0>());
    return e.empty() ? check_invariants(m.part<1>()) : e;
  }
};

struct split_parts {
  using global_part = memory::split_stream<float>;
  using local_part = memory::split_window<float>;
  using mem = memory::layered<global_part, local_part>;
  static constexpr bool refuses_coupled = true;

  static mem make(const config_draw& c) {
    memory::split_stream_config g;
    g.shape = shape_of(c, 2);
    g.size_per_stream = c.global_cells;
    g.n_seq_max = c.n_seq;
    g.block_cells = c.block_cells;
    g.pool_blocks = c.pool_blocks;
    g.rope = rope_of(c);
    memory::split_window_config w;
    w.n_seq_max = c.n_seq;
    w.stream = window_of(c, 1, c.local_cells);
    return compose<global_part, local_part>(g, w);
  }
  static mem_snap snaps(const mem& m) {
    const auto& g = m.part<0>();
    const auto& w = m.part<1>();
    part_snap a, b;
    for (seq_id s = 0; s < g.config().n_seq_max; ++s) {
      a.streams.push_back(stream_snap(g, s));
      for (auto blk : g.stream_of(s).blocks) a.extra.push_back(blk);
      a.extra.push_back(static_cast<long long>(g.stream_of(s).head));
      b.streams.push_back(snap(w.stream(s), live_rows));
      b.extra.push_back(w.horizon(s));
    }
    for (std::size_t k = 0; k < g.pool().n_blocks(); ++k)
      a.extra.push_back(g.pool().refs(static_cast<memory::block_id>(k)));
    a.extra.push_back(static_cast<long long>(g.pool().n_free()));
    return {a, b};
  }
  static positions_t global_positions(const mem& m, seq_id s) {
    return m.part<0>().stream_of(s).cells.seq_positions(s);
  }
  static positions_t local_positions(const mem& m, seq_id s) {
    return m.part<1>().stream(s).cells().seq_positions(0);
  }
  static pos_t horizon(const mem& m, seq_id s) { return m.part<1>().horizon(s); }
  static std::string invariants(const mem& m) {
    for (seq_id s = 0; s < m.part<1>().config().n_seq_max; ++s)
      if (std::string e = check_invariants(m.part<1>().stream(s)); !e.empty())
        return "window stream " + std::to_string(s) + ": " + e;
    return "";
  }
};

/// The number after "resume from " (or "resume from is ") in a lost-context status.
long resume_from(const std::string& msg) {
  std::size_t at = msg.find("resume from ");
  if (at == std::string::npos) return -1000;
  at += 12;
  if (msg.compare(at, 3, "is ") == 0) at += 3;
  return std::strtol(msg.c_str() + at, nullptr, 10);
}

/// How often the interesting paths ran (a test whose refusals never happen proves
/// little). This test found two bugs, both fixed: a rollback that handed a stream a
/// shared block another stream had written into in place (split_stream), and resume
/// points at a chunk boundary that seq_rm then refused (window_rules.hpp).
struct tally {
  long rollbacks = 0, no_space = 0, coupled = 0, lost = 0, states = 0, refused_states = 0;
};

// ---- one seed ---------------------------------------------------------------------

template <class T>
class tester {
 public:
  using mem = typename T::mem;

  tester(window_kind kind, std::uint64_t seed, tally& counts)
      : r_{seed}, c_(draw(kind, r_)), m_(T::make(c_)), f_(make_model(c_)), tally_(&counts) {}

  const config_draw& config() const { return c_; }
  long accepted() const { return accepted_; }

  /// One random step; "" or the first difference. `what` names the step.
  std::string step(std::string& what) {
    const int w = r_.range(0, 99);
    std::string err = w < 55   ? decode(what)
                      : w < 92 ? sequence_op(what)
                      : w < 93 ? clear(what)
                               : state_trip(what);
    return err.empty() ? compare() : err;
  }

 private:
  static full make_model(const config_draw& c) {
    memory::full_cache_config fc;
    fc.shape = shape_of(c, k_layers);
    fc.size = 2048;
    fc.n_seq_max = c.n_seq;
    fc.rope = rope_of(c);
    return std::move(full::make(fc)).value();
  }

  attention::params params_of(std::size_t l) const {
    attention::params ap;
    ap.scale = 0.2f;
    if (!is_global(l)) {
      ap.window = c_.kind;
      ap.n_swa = c_.n_swa;
      ap.causal = c_.causal_local;
    }
    return ap;
  }

  /// A batch continuing random sequences; sometimes a prefix of coupled tokens of
  /// sequences holding the same positions (the validator's rule for coupled tokens).
  std::vector<token> random_batch(bool& coupled) {
    const seq_id n = c_.n_seq;
    std::vector<pos_t> next(static_cast<std::size_t>(n));
    for (seq_id s = 0; s < n; ++s) next[std::size_t(s)] = m_.seq_pos_max(s) + 1;
    const int count = r_.range(1, 8);
    std::vector<token> batch;
    coupled = false;
    if (n > 1 && r_.chance(25)) {
      const seq_id a = static_cast<seq_id>(r_.range(0, n - 1));
      seq_set set = seq_set::of(a);
      for (seq_id s = 0; s < n; ++s)
        if (s != a && m_.seq_pos_min(s) == m_.seq_pos_min(a) &&
            m_.seq_pos_max(s) == m_.seq_pos_max(a) && r_.chance(60))
          set.insert(s);
      if (set.count() > 1) {
        coupled = true;
        const int k = r_.range(1, count);
        for (int i = 0; i < k; ++i) batch.push_back({next[std::size_t(a)]++, set});
        for (seq_id s = 0; s < n; ++s)
          if (set.contains(s)) next[std::size_t(s)] = next[std::size_t(a)];
      }
    }
    while (static_cast<int>(batch.size()) < count) {
      const seq_id s = static_cast<seq_id>(r_.range(0, n - 1));
      batch.push_back(at(s, next[std::size_t(s)]++));
    }
    return batch;
  }

  std::string decode(std::string& what) {
    bool coupled = false;
    const std::vector<token> toks = random_batch(coupled);
    const std::uint32_t n_ub = static_cast<std::uint32_t>(r_.range(1, int(toks.size())));
    const bool fail = r_.chance(15);
    what = "decode of " + std::to_string(toks.size()) + " tokens" + (coupled ? " (coupled)" : "") +
           ", n_ubatch " + std::to_string(n_ub) + (fail ? ", failing" : "");
    batch bt;
    for (const auto& t : toks) {
      std::vector<seq_id> ids;
      for (seq_id s = 0; s < c_.n_seq; ++s)
        if (t.seqs.contains(s)) ids.push_back(s);
      bt.add(1, t.pos, std::span<const seq_id>(ids), true);
    }
    batch_limits lim;
    lim.n_seq_max = static_cast<std::uint32_t>(c_.n_seq);
    auto vb = validate(bt, lim, memory::positions_of<mem>{m_});
    if (!vb.is_ok()) return "the validator refused a continuing batch: " + vb.error().to_string();
    if (!m_.update().is_ok() || !f_.update().is_ok()) return "update failed";
    // Rows written to free cells are unreachable after a rollback: live rows only.
    const mem_snap before = T::snaps(m_);
    auto plan = memory::plan_batch(m_, *vb, n_ub);
    if (!plan.is_ok()) {
      const status& st = plan.error();
      const bool split_refusal =
          T::refuses_coupled && coupled && st.code() == status_code::unsupported;
      if (st.code() != status_code::no_space && !split_refusal)
        return "the composite refused: " + st.to_string();
      ++(split_refusal ? tally_->coupled : tally_->no_space);
      if (m_.in_batch()) return "a refused plan left a batch open";
      const std::string d = diff(before, T::snaps(m_));
      return d.empty() ? "" : "a refused plan changed the memory: " + d;
    }
    if (T::refuses_coupled && coupled) return "coupled tokens were planned over split streams";
    const auto& tokens = plan->tokens;
    if (const status fs = f_.prepare(tokens); !fs.is_ok())
      return "model prepare: " + fs.to_string();
    const int fail_after = fail ? r_.range(0, int(tokens.size()) - 1) : -1;
    const auto& fcfg = f_.config();
    for (std::size_t u = 0; u < tokens.size(); ++u) {
      if (const status st = m_.apply(u, tokens[u]); !st.is_ok())
        return "apply " + std::to_string(u) + ": " + st.to_string();
      if (const status st = f_.apply(u, tokens[u]); !st.is_ok()) return "model apply failed";
      for (std::size_t j = 0; j < tokens[u].size(); ++j) {
        const seq_id s = first_seq(tokens[u].seqs[j]);
        const pos_t p = tokens[u].pos[j];
        for (std::size_t l = 0; l < k_layers; ++l) {
          const auto k = rotated_k(fcfg, l, s, p, p);
          const auto v = raw_v(fcfg.shape, l, s, p);
          m_.write_kv(l, u, j, k.data(), v.data());
          f_.write_kv(l, u, j, k.data(), v.data());
        }
      }
      if (std::string e = attend(u, tokens[u]); !e.empty()) return e;
      if (static_cast<int>(u) == fail_after) {
        m_.rollback();
        f_.rollback();
        if (m_.in_batch()) return "rollback left a batch open";
        const std::string d = diff(before, T::snaps(m_));
        ++tally_->rollbacks;
        return d.empty() ? "" : "rollback after micro-batch " + std::to_string(u) + ": " + d;
      }
    }
    m_.commit();
    f_.commit();
    ++accepted_;
    return "";
  }

  /// Random queries of micro-batch u through both memories' views of every layer.
  std::string attend(std::size_t u, const memory::ubatch_tokens& ub) {
    const attention::shape ash{4, 2, c_.d, c_.d};
    const std::size_t n = ub.size();
    std::vector<float> q(n * ash.n_head * ash.d_k);
    for (auto& x : q) x = static_cast<float>(r_.range(-1000, 1000)) / 1000.0f;
    std::vector<seq_id> qs;
    for (const auto& s : ub.seqs) qs.push_back(first_seq(s));
    for (std::size_t l = 0; l < k_layers; ++l) {
      const attention::params ap = params_of(l);
      const auto w = m_.window(l);
      if (w.first != ap.window || (ap.window != window_kind::none && w.second != ap.n_swa))
        return "layer " + std::to_string(l) + ": the composite reports another window";
      memory::layer_views vm, vf;
      m_.views(l, u, vm);
      f_.views(l, u, vf);
      const attention::query_batch qm{q.data(), n, ub.pos.data(), qs.data(),
                                      vm.token_stream.empty() ? nullptr : vm.token_stream.data()};
      const attention::query_batch qf{q.data(), n, ub.pos.data(), qs.data(),
                                      vf.token_stream.empty() ? nullptr : vf.token_stream.data()};
      std::vector<float> om(n * ash.n_head * ash.d_v), of(om.size());
      if (const status st =
              attention::reference_attend<float, float>(ash, ap, qm, vm.streams, om.data());
          !st.is_ok())
        return "attend over the composite: " + st.to_string();
      if (!attention::reference_attend<float, float>(ash, ap, qf, vf.streams, of.data()).is_ok())
        return "attend over the model failed";
      for (std::size_t i = 0; i < om.size(); ++i)
        if (!(std::fabs(om[i] - of[i]) <= 1e-5f)) {
          char b[320];
          const std::size_t t = i / (ash.n_head * ash.d_v);
          std::snprintf(b, sizeof b,
                        "attention differs: micro-batch %zu, layer %zu (%s), token %zu (seq %d, "
                        "pos %d), element %zu: composite %g, model %g",
                        u, l, is_global(l) ? "global" : "local", t, qs[t], ub.pos[t],
                        i % (ash.n_head * ash.d_v), double(om[i]), double(of[i]));
          return b;
        }
    }
    return "";
  }

  static std::string op_name(const memory::seq_op& o) {
    static const char* names[] = {"seq_rm", "seq_cp", "seq_keep", "seq_add", "seq_div"};
    std::string r = std::string(names[static_cast<int>(o.k)]) + "(" + std::to_string(o.a);
    if (o.k == memory::seq_op::kind::cp) r += ", " + std::to_string(o.b);
    if (o.k != memory::seq_op::kind::keep)
      r += ", " + std::to_string(o.p0) + ", " + std::to_string(o.p1);
    if (o.k == memory::seq_op::kind::add) r += ", " + std::to_string(o.delta);
    if (o.k == memory::seq_op::kind::div) r += ", " + std::to_string(o.d);
    return r + ")";
  }

  std::string sequence_op(std::string& what) {
    const seq_id n = c_.n_seq;
    const seq_id s = static_cast<seq_id>(r_.range(0, n - 1));
    const seq_id other = static_cast<seq_id>(r_.range(0, n - 1));
    const pos_t top_all = std::max<pos_t>(0, f_.seq_pos_max(s));
    const pos_t p0 = r_.range(0, top_all + 1), p1 = r_.chance(50) ? -1 : r_.range(p0, top_all + 2);
    const int w = r_.range(0, 99);
    using op = memory::seq_op;
    const op o = w < 2    ? op::rm(-1, -1, -1)
                 : w < 57 ? op::rm(s, p0, p1)
                 : w < 67 ? op::cp(s, other, -1, -1)
                 : w < 74 ? op::cp(s, other, p0, p1)
                 : w < 78 ? op::keep(s)
                 : w < 94 ? op::add(s, p0, p1, r_.range(-4, 4))
                          : op::div(s, p0, p1, 2);
    what = op_name(o);
    // What the lost-context queries promise for a removal (model positions: the
    // composite's window part may hold fewer).
    const memory::pos_range range = memory::pos_range::of(o.p0, o.p1);
    const bool whole = range.p0 == 0 && range.p1 == std::numeric_limits<pos_t>::max();
    bool touched = false;
    pos_t rest = -1;  // the highest position s keeps
    for (const auto& [p, k] : f_.cells().seq_positions(s)) {
      (void)k;
      if (range.contains(p))
        touched = true;
      else
        rest = std::max(rest, p);
    }
    const bool can_before = m_.can_resume(s, rest + 1);
    const pos_t erp = m_.earliest_restorable_pos(o.a < 0 ? 0 : o.a);
    const mem_snap before = T::snaps(m_);
    const status chk = m_.check_seq_op(o);
    const status st = memory::run_seq_op(m_, o);
    if (st.code() == status_code::internal) return "the parts disagree: " + st.to_string();
    if (!chk.is_ok() && (st.is_ok() || st.code() != chk.code()))
      return "check and operation disagree: " + chk.to_string() + " / " + st.to_string();
    if (chk.is_ok() && !st.is_ok() && !T::refuses_coupled)  // only split_stream is unchecked
      return "a checked composite refused after its check passed: " + st.to_string();
    const bool rm_of_s = o.k == memory::seq_op::kind::rm && o.a >= 0 && touched && !whole;
    if (st.is_ok()) {
      if (const status fs = memory::run_seq_op(f_, o); !fs.is_ok())
        return "the model refused: " + fs.to_string();
      if (rm_of_s && rest >= 0 && (!can_before || rest + 1 < erp))
        return "accepted, but can_resume(" + std::to_string(rest + 1) + ") was " +
               (can_before ? "true" : "false") + " and earliest_restorable_pos " +
               std::to_string(erp);
      return "";
    }
    if (const std::string d = diff(before, T::snaps(m_)); !d.empty())
      return "a refused operation changed the memory (" + st.to_string() + "): " + d;
    if (st.code() == status_code::no_space) return "";
    if (st.code() != status_code::unsupported) return "unexpected refusal: " + st.to_string();
    ++tally_->lost;
    // Lost context: the status names the position the queries give.
    if (resume_from(st.message()) != erp)
      return "lost context names another earliest position than earliest_restorable_pos " +
             std::to_string(erp) + ": " + st.to_string();
    // A copy that leaves dst empty through a bounded range is refused when dst forgot
    // something (dst could restart at 0; the status names src's position): tolerated.
    if (o.k == memory::seq_op::kind::cp) return "";
    if (erp <= 0) return "lost context, but earliest_restorable_pos is 0: " + st.to_string();
    if (o.k == memory::seq_op::kind::rm) {
      if (!rm_of_s) return "a removal that keeps the window was refused: " + st.to_string();
      if (rest >= 0 && (can_before || rest + 1 >= erp))
        return "refused, but can_resume(" + std::to_string(rest + 1) + ") is " +
               (can_before ? "true" : "false") + " and earliest_restorable_pos " +
               std::to_string(erp) + ": " + st.to_string();
    }
    return "";
  }

  std::string clear(std::string& what) {
    const bool data = r_.chance(50);
    what = data ? "clear(true)" : "clear(false)";
    m_.clear(data);
    f_.clear(true);
    return "";
  }

  /// Whole or per-sequence state into a fresh composite, or per-sequence in place
  /// (sometimes damaged in the window part: every part must then stay as it was).
  std::string state_trip(std::string& what) {
    const int kind = r_.range(0, 2);
    const seq_id s = static_cast<seq_id>(r_.range(0, c_.n_seq - 1));
    const seq_id d = static_cast<seq_id>(r_.range(0, c_.n_seq - 1));
    ++tally_->states;
    if (kind == 0) {
      what = "whole state into a fresh composite";
      auto blob = memory::state_write(m_);
      if (!blob.is_ok()) return "state_write: " + blob.error().to_string();
      mem n = T::make(c_);
      if (const status st = memory::state_read(n, *blob); !st.is_ok())
        return "state_read: " + st.to_string();
      for (seq_id q = 0; q < c_.n_seq; ++q)
        if (n.seq_pos_min(q) != m_.seq_pos_min(q) || n.seq_pos_max(q) != m_.seq_pos_max(q) ||
            n.earliest_restorable_pos(q) != m_.earliest_restorable_pos(q))
          return "sequence " + std::to_string(q) + " differs after the round trip";
      auto again = memory::state_write(n);
      if (!again.is_ok() || *again != *blob) return "the restored memory writes another state";
      m_ = std::move(n);
      return "";
    }
    what = std::string(kind == 1 ? "state of " : "in-place state of ") + std::to_string(s) +
           " into " + std::to_string(d);
    const pos_t top = m_.seq_pos_max(s);
    auto blob = memory::state_write(m_, s);
    if (!blob.is_ok()) return "state_write: " + blob.error().to_string();
    if (kind == 1) {
      mem n = T::make(c_);
      if (const status st = memory::state_read(n, *blob, d); !st.is_ok())
        return "state_read into a fresh composite: " + st.to_string();
      if (n.seq_pos_max(d) != top) return "the restored sequence ends elsewhere";
      if (d != s && (!f_.seq_rm(d, -1, -1).is_ok() || !f_.seq_cp(s, d, -1, -1).is_ok()))
        return "model copy failed";
      if (!f_.seq_keep(d).is_ok()) return "model seq_keep failed";
      m_ = std::move(n);
      return "";
    }
    const bool damage = r_.chance(30);
    if (damage) {
      what += ", damaged";
      (*blob)[blob->size() - 3] ^= 0x40;  // inside the window part's own state
      reseal(*blob);
    }
    const mem_snap before = T::snaps(m_);  // after state_write, which applies shifts
    const status st = memory::state_read(m_, *blob, d);
    if (st.is_ok()) {
      if (damage) return "a damaged state was accepted";
      if (d != s && (!f_.seq_rm(d, -1, -1).is_ok() || !f_.seq_cp(s, d, -1, -1).is_ok()))
        return "model copy failed";
      return "";
    }
    if (!damage && st.code() != status_code::no_space) return "state_read: " + st.to_string();
    ++tally_->refused_states;
    if (const std::string e = diff(before, T::snaps(m_)); !e.empty())
      return "a refused state changed the memory (" + st.to_string() + "): " + e;
    return "";
  }

  /// Per sequence: the parts agree with each other and with the model (the global part
  /// holds the model's positions, the window part those from its horizon up), and the
  /// sequence can continue after its last position.
  std::string compare() const {
    if (m_.in_batch()) return "a batch is open after the step";
    for (seq_id s = 0; s < c_.n_seq; ++s) {
      const std::string who = "sequence " + std::to_string(s) + ": ";
      const pos_t top = f_.seq_pos_max(s);
      if (m_.seq_pos_max(s) != top)
        return who + "pos_max " + std::to_string(m_.seq_pos_max(s)) + ", model " +
               std::to_string(top);
      if (m_.template part<0>().seq_pos_max(s) != m_.template part<1>().seq_pos_max(s))
        return who + "the parts' pos_max differ";
      if (T::global_positions(m_, s) != f_.cells().seq_positions(s))
        return who + "the global part's positions differ from the model's";
      const pos_t h = T::horizon(m_, s);
      auto from_h = [h](const positions_t& v) {
        positions_t r;
        for (const auto& pc : v)
          if (pc.first >= h) r.push_back(pc);
        return r;
      };
      if (from_h(T::local_positions(m_, s)) != from_h(f_.cells().seq_positions(s)))
        return who + "the window part's positions from horizon " + std::to_string(h) +
               " differ from the model's";
      if (top >= 0 && !m_.can_resume(s, top + 1))
        return who + "cannot continue after its last position " + std::to_string(top);
    }
    return T::invariants(m_);
  }

  rng r_;
  config_draw c_;
  mem m_;
  full f_;
  tally* tally_;
  long accepted_ = 0;
};

template <class T>
void run_seed(window_kind kind, std::uint64_t seed, const char* name, tally& known) {
  tester<T> t(kind, seed, known);
  const config_draw& c = t.config();
  for (int step = 0; step < 150; ++step) {
    std::string what;
    const std::string err = t.step(what);
    ASSERT_EQ(err, "") << name << ", seed " << seed << " (" << attention::to_string(kind)
                       << " n_swa " << c.n_swa << ", " << c.n_seq << " sequences, d " << c.d
                       << ", global " << c.global_cells << " cells, local " << c.local_cells
                       << " per sequence, blocks " << c.block_cells << " x " << c.pool_blocks
                       << "); step " << step << ": " << what;
  }
  EXPECT_GT(t.accepted(), 10) << name << ", seed " << seed << ": too few decodes went through";
}

constexpr std::uint64_t k_seeds = 40;

class LayeredFullWindowModel : public ::testing::TestWithParam<window_kind> {};
class LayeredSplitWindowModel : public ::testing::TestWithParam<window_kind> {};

template <class T>
void run_seeds(window_kind kind, const char* name) {
  tally known;
  for (std::uint64_t seed = 1; seed <= k_seeds; ++seed) {
    run_seed<T>(kind, seed * 7919 + static_cast<std::uint64_t>(kind), name, known);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Every refusal path ran (seeds are fixed: these hold for every build).
  EXPECT_GT(known.rollbacks, 20) << name;
  EXPECT_GT(known.no_space, 5) << name;
  EXPECT_GT(known.lost, 5) << name;
  EXPECT_GT(known.states, 20) << name;
  EXPECT_GT(known.refused_states, 5) << name;
  if (T::refuses_coupled) {
    EXPECT_GT(known.coupled, 5) << name;
  }
  std::printf(
      "%s, %s: %ld rollbacks, %ld no_space, %ld coupled and %ld lost-context "
      "refusals, %ld state round trips (%ld refused)\n",
      name, attention::to_string(kind).data(), known.rollbacks, known.no_space, known.coupled,
      known.lost, known.states, known.refused_states);
}

TEST_P(LayeredFullWindowModel, MatchesOneFullCacheWithWindowMasks) {
  run_seeds<unified_parts>(GetParam(), "layered<full_cache, sliding_window>");
}

TEST_P(LayeredSplitWindowModel, MatchesOneFullCacheWithWindowMasks) {
  run_seeds<split_parts>(GetParam(), "layered<split_stream, split_window>");
}

const auto k_kinds =
    ::testing::Values(window_kind::standard, window_kind::chunked, window_kind::symmetric);
std::string kind_name(const ::testing::TestParamInfo<window_kind>& i) {
  return std::string(attention::to_string(i.param));
}
INSTANTIATE_TEST_SUITE_P(Kinds, LayeredFullWindowModel, k_kinds, kind_name);
INSTANTIATE_TEST_SUITE_P(Kinds, LayeredSplitWindowModel, k_kinds, kind_name);

}  // namespace
