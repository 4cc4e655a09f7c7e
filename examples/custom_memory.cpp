// A user-defined memory strategy in one screen (docs/writing-a-memory.md): a K/V cache
// for one sequence with a hard cap on the tokens it holds, built from the library's
// core pieces (kv_storage for the rows, the token checks and sequence guards, the
// stream views). memory::check_kv_memory checks it at compile time (remove
// split_strategy() and the compiler names it); context<Model, capped_cache> drives it.
//
//   custom_memory [model.gguf]      (default: the fixtures' llama-tiny.gguf)
//
// It decodes a prompt in several micro-batches, then token by token, removes a suffix
// and continues there, removes a middle range and continues, once on capped_cache and
// once on full_cache, and ends with a self-check (every logit row equal within 1e-5; a
// batch beyond the cap refused with no_space and nothing changed): `self-check: PASS`,
// or `FAIL` and exit code 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "mnemo/context.hpp"
#include "mnemo/dtype/rows.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/kv_storage.hpp"
#include "mnemo/memory/seq_guards.hpp"
#include "mnemo/memory/stream_views.hpp"
#include "mnemo/memory/token_checks.hpp"
#include "mnemo/model/llama.hpp"

namespace mem = mnemo::memory;
using mnemo::pos_t;
using mnemo::seq_id;
using mnemo::status;
using mnemo::status_code;

// ---- the strategy --------------------------------------------------------------------
/// One sequence (id 0) in cells [0, n) in the order decoded, at most `cap` of them.
/// seq_rm removes any range and closes the gap; positions never move (can_shift false).
template <mnemo::dtype::kv_element KE>
class capped_cache {
 public:
  using k_element = KE;
  using v_element = KE;

  static mnemo::result<capped_cache> make(const mem::kv_shape& shape, std::size_t cap) {
    capped_cache c;
    MNEMO_ASSIGN_OR_RETURN(c.kv_, (mem::kv_storage<KE, KE>::make(shape, cap)));
    c.pos_.assign(cap, -1);
    return c;
  }

  // ---- sequence operations: a status, and nothing changed on an error --------------
  status seq_rm(seq_id s, pos_t p0, pos_t p1) {
    MNEMO_RETURN_IF_ERROR(mem::check_seq(s, 1, "seq_rm", true));
    MNEMO_RETURN_IF_ERROR(mem::check_not_in_batch(in_batch(), "seq_rm"));
    const mem::pos_range r = mem::pos_range::of(p0, p1);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (r.contains(pos_[i])) continue;
      if (i != kept) {
        kv_.copy_cell(i, kept);
        pos_[kept] = pos_[i];
      }
      ++kept;
    }
    std::fill(pos_.begin() + static_cast<std::ptrdiff_t>(kept), pos_.end(), -1);
    n_ = kept;
    return {};
  }
  status seq_cp(seq_id src, seq_id dst, pos_t, pos_t) {  // only onto itself: one sequence
    MNEMO_RETURN_IF_ERROR(mem::check_seq(src, 1, "seq_cp"));
    MNEMO_RETURN_IF_ERROR(mem::check_seq(dst, 1, "seq_cp"));
    return mem::check_not_in_batch(in_batch(), "seq_cp");
  }
  status seq_keep(seq_id s) {
    MNEMO_RETURN_IF_ERROR(mem::check_seq(s, 1, "seq_keep"));
    return mem::check_not_in_batch(in_batch(), "seq_keep");
  }
  status seq_add(seq_id s, pos_t, pos_t, pos_t) {
    return mem::check_shift_allowed(s, 1, in_batch(), false, "seq_add");
  }
  status seq_div(seq_id s, pos_t, pos_t, int) {
    return mem::check_shift_allowed(s, 1, in_batch(), false, "seq_div");
  }
  void clear(bool data) {
    rollback();
    std::fill(pos_.begin(), pos_.end(), -1);
    n_ = 0;
    if (data) kv_.zero();
  }

  // ---- queries -----------------------------------------------------------------------
  pos_t seq_pos_min(seq_id s) const {
    return s == 0 && n_ > 0 ? *std::min_element(pos_.begin(), pos_.begin() + span_end()) : -1;
  }
  pos_t seq_pos_max(seq_id s) const {
    return s == 0 && n_ > 0 ? *std::max_element(pos_.begin(), pos_.begin() + span_end()) : -1;
  }
  seq_id n_seq_max() const { return 1; }
  std::size_t n_layer() const { return kv_.shape().n_layer; }
  bool can_shift() const { return false; }
  mem::memory_report report() const {
    mem::memory_report r;
    const auto name = mnemo::dtype::element_traits<KE>::name;
    mem::add_kv_layers(r, n_layer(), "kv-capped", name, name, kv_.k_row_bytes() * kv_.size(),
                       kv_.v_row_bytes() * kv_.size());
    r.cells = kv_.size();
    r.cells_used = n_;
    if (n_ > 0) r.cells_per_seq.push_back({0, n_});
    return r;
  }

  // ---- planning and transactions -----------------------------------------------------
  /// One cell array: any split will do.
  static mnemo::simple_split split_strategy(std::uint32_t n_ubatch) { return {n_ubatch}; }
  status update() { return mem::check_not_in_batch(in_batch(), "update"); }  // no K-shift

  /// Cells for every micro-batch, after the ones held, or no_space and nothing changed.
  status prepare(std::span<const mem::ubatch_tokens> ubatches) {
    MNEMO_RETURN_IF_ERROR(mem::check_not_in_batch(in_batch(), "prepare"));
    std::vector<std::size_t> first;
    std::size_t end = n_;
    for (std::size_t u = 0; u < ubatches.size(); ++u) {
      MNEMO_RETURN_IF_ERROR(mem::check_stream_tokens("prepare", u, ubatches[u], 1,
                                                     "capped_cache holds one sequence"));
      first.push_back(end);
      end += ubatches[u].size();
    }
    if (end > kv_.size())
      return mnemo::make_status(status_code::no_space,
                                "capped_cache: the batch needs %zu cells, %zu of %zu are free",
                                end - n_, kv_.size() - n_, kv_.size());
    first_ = std::move(first);
    return {};
  }
  /// Places prepared micro-batch u; the first apply remembers where to roll back to.
  status apply(std::size_t u, const mem::ubatch_tokens& ub) {
    if (u >= first_.size())
      return mnemo::make_status(status_code::invalid_argument,
                                "apply: micro-batch %zu was not prepared", u);
    if (!open_) n_before_ = n_;
    open_ = true;
    for (std::size_t j = 0; j < ub.size(); ++j) pos_[first_[u] + j] = ub.pos[j];
    n_ = std::max(n_, first_[u] + ub.size());
    return {};
  }
  void commit() {
    open_ = false;
    first_.clear();
  }
  void rollback() {  // the rows written past n_before_ become unreachable
    if (open_) {
      std::fill(pos_.begin() + static_cast<std::ptrdiff_t>(n_before_),
                pos_.begin() + static_cast<std::ptrdiff_t>(n_), -1);
      n_ = n_before_;
    }
    commit();
  }

  // ---- what the model writes and reads ------------------------------------------------
  /// k: [n_head_kv, d_k] f32, v: [n_head_kv, d_v] f32, encoded to KE.
  template <class Isa = mnemo::simd::native>
  void write_kv(std::size_t layer, std::size_t u, std::size_t j, const float* k,
                const float* v) noexcept {
    const std::size_t cell = first_[u] + j;
    const mem::kv_shape& sh = kv_.shape();
    mnemo::dtype::encode_row<Isa>(k, kv_.k(layer, cell), sh.n_head_kv * sh.d_k);
    mnemo::dtype::encode_row<Isa>(v, kv_.v(layer, cell), sh.n_head_kv * sh.d_v);
  }
  /// Every token attends cells [0, n): one stream of one segment (the causal mask
  /// hides the micro-batch's later tokens); no window.
  void views(std::size_t layer, std::size_t, mem::layer_views& out) const {
    mem::start_views(out, {});
    mnemo::attention::kv_segment g;
    g.k = kv_.k(layer, 0);
    g.v = kv_.v(layer, 0);
    g.k_stride = kv_.k_row_bytes();
    g.v_stride = kv_.v_row_bytes();
    g.pos = pos_.data();
    g.n_cells = n_;
    out.segments.push_back(g);
    mem::view_per_segment(out);
  }

 private:
  bool in_batch() const { return open_ || !first_.empty(); }
  std::ptrdiff_t span_end() const { return static_cast<std::ptrdiff_t>(n_); }

  mem::kv_storage<KE, KE> kv_;
  std::vector<pos_t> pos_;          // [cap] position of each cell; -1: free
  std::size_t n_ = 0;               // cells in use: [0, n_)
  std::vector<std::size_t> first_;  // per prepared micro-batch, its first cell
  bool open_ = false;               // applied since the last commit / rollback
  std::size_t n_before_ = 0;        // n_ when the batch was first applied
};
static_assert(mem::check_kv_memory<capped_cache<mnemo::dtype::f16>>::value);
// -------------------------------------------------------------------------------------

namespace {

/// `t` at positions p0.. of sequence 0, every token asking for logits.
mnemo::batch at(const std::vector<mnemo::token_id>& t, pos_t p0) {
  mnemo::batch b;
  for (std::size_t i = 0; i < t.size(); ++i) b.add(t[i], p0 + static_cast<pos_t>(i), {0}, true);
  return b;
}

/// The rows of every output of one decode.
template <class Ctx>
std::vector<float> decode(Ctx& ctx, const std::vector<mnemo::token_id>& t, pos_t p0, bool& ok) {
  if (status st = ctx.decode(at(t, p0)); !st) {
    std::fprintf(stderr, "decode: %s\n", st.to_string().c_str());
    ok = false;
    return {};
  }
  return {ctx.logits().begin(), ctx.logits().end()};
}

/// Largest |a - b| relative to max(1, |b|); prints the first element beyond 1e-5.
bool same_logits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  if (a.size() != b.size() || a.empty()) {
    std::printf("%s: %zu vs %zu logits\n", what, a.size(), b.size());
    return false;
  }
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double{a[i]} - b[i]) / std::max(1.0, std::fabs(double{b[i]}));
    if (d > 1e-5 && worst <= 1e-5) std::printf("%s: logit %zu: %g vs %g\n", what, i, a[i], b[i]);
    worst = std::max(worst, d);
  }
  std::printf("%-28s %zu logits, largest relative difference %.2g\n", what, a.size(), worst);
  return worst <= 1e-5;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mnemo;
  if (argc > 2) return std::fprintf(stderr, "usage: custom_memory [model.gguf]\n"), 2;
  const std::string path =
      argc > 1 ? argv[1] : std::string(MNEMO_FIXTURES_DIR) + "/llama-tiny.gguf";
  auto model = model::llama_model::open(path);
  if (!model.is_ok()) return std::fprintf(stderr, "%s\n", model.error().message().c_str()), 1;
  const model::llama_model& m = *model;

  constexpr std::size_t cap = 64;
  using capped_t = capped_cache<dtype::f16>;
  using full_t = memory::full_cache<dtype::f16>;
  auto capped = capped_t::make(m.kv_shape(), cap);
  auto full = full_t::make(m.full_cache_config(cap, 1));
  if (!capped.is_ok() || !full.is_ok()) return std::fprintf(stderr, "make failed\n"), 1;
  const context_params p{.n_ubatch = 16, .n_seq_max = 1, .n_threads = 1};
  auto a = context<model::llama_model, capped_t>::make(m, std::move(capped).value(), p);
  auto b = context<model::llama_model, full_t>::make(m, std::move(full).value(), p);
  if (!a.is_ok() || !b.is_ok()) return std::fprintf(stderr, "context failed\n"), 1;

  auto tokens = [&](std::size_t n, std::uint32_t seed) {
    std::vector<token_id> t(n);
    for (std::size_t i = 0; i < n; ++i)
      t[i] = static_cast<token_id>((seed + 7 * i * i + 3 * i) % m.n_vocab());
    return t;
  };
  bool ok = true;
  // A prompt of 40 tokens (micro-batches of 16), then 8 steps of one token.
  ok &= same_logits(decode(*a, tokens(40, 1), 0, ok), decode(*b, tokens(40, 1), 0, ok), "prompt");
  std::vector<float> ra, rb;
  for (pos_t q = 40; q < 48; ++q) {
    const auto one = tokens(1, static_cast<std::uint32_t>(q));
    for (float x : decode(*a, one, q, ok)) ra.push_back(x);
    for (float x : decode(*b, one, q, ok)) rb.push_back(x);
  }
  ok &= same_logits(ra, rb, "8 generated tokens");
  // Remove positions 30.. and continue there with other tokens.
  ok &= a->seq_rm(0, 30, -1).is_ok() && b->seq_rm(0, 30, -1).is_ok();
  ok &= same_logits(decode(*a, tokens(12, 9), 30, ok), decode(*b, tokens(12, 9), 30, ok),
                    "after seq_rm(0, 30, -1)");
  // The cap: 42 cells are used, a batch of 30 more is refused and changes nothing.
  const status over = a->decode(at(tokens(30, 5), 42));
  std::printf("beyond the cap: %s\n", over.to_string().c_str());
  ok &= over.code() == status_code::no_space && a->seq_pos_max(0) == 41;
  ok &= same_logits(decode(*a, tokens(4, 2), 42, ok), decode(*b, tokens(4, 2), 42, ok),
                    "after the refused batch");
  // A range in the middle: capped_cache closes the gap, full_cache leaves free cells.
  ok &= a->seq_rm(0, 10, 20).is_ok() && b->seq_rm(0, 10, 20).is_ok();
  ok &= same_logits(decode(*a, tokens(4, 3), 46, ok), decode(*b, tokens(4, 3), 46, ok),
                    "after seq_rm(0, 10, 20)");
  std::printf("%s", a->memory().report().to_string().c_str());
  std::printf("self-check: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
