// Quest (Tang et al., ICML 2024, arXiv 2406.10774): query-aware page selection, a
// read policy, not an eviction. The cells of a stream are cut into pages of
// `page_size`; each page keeps, per KV head and key channel, the minimum m and the
// maximum M of its keys (post-RoPE, as cached), updated when a cell is appended. A
// decode step bounds every page's logit by
//   U(q, page) = sum_c max(q_c m_c, q_c M_c)  >=  q . k  for every key k of the page
// and reads only the `top_pages` pages with the largest bound. Nothing is freed.
//
// GQA: one page set per KV head (per_head, the paper's per-head selection), where a
// page's score is the largest bound over the head's query group (the page may hold
// a key some query head of the group attends strongly); or one set for the whole
// layer (score: the largest bound over every query head). The page holding the
// newest cell is always read (the query's own token is in it) and counts toward
// top_pages. Ties go to the lower (older) page.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/detail/quest_bounds.hpp"

namespace mnemo::evict {

struct quest_config {
  std::size_t page_size = 16;  // cells per page
  std::size_t top_pages = 64;  // pages read per decode step (the newest page included)
  std::size_t n_head_kv = 1, d_k = 0;
  bool per_head = true;  // false: one page set for every KV head of the layer

  status validate() const {
    if (page_size == 0 || top_pages == 0 || n_head_kv == 0 || d_k == 0)
      return make_status(status_code::invalid_argument,
                         "quest: page_size (%zu), top_pages (%zu), n_head_kv (%zu) and d_k (%zu) "
                         "must be > 0",
                         page_size, top_pages, n_head_kv, d_k);
    return {};
  }
  /// The cells a decode step reads at most.
  std::size_t read_budget() const noexcept { return page_size * top_pages; }
};

/// Page metadata of one stream (one sequence in one layer) and the per-step selection.
///
/// Cost of a step: one bound per page per query head, 2 d_k FMAs, against attention's
/// 2 d_k FMAs per query head and read cell: about n_pages / (top_pages x page_size) of
/// the attention's arithmetic, so the selection stays under a tenth of it while the
/// held context is below ~0.13 x read budget x page_size (docs/eviction.md, measured).
class quest_index {
 public:
  static constexpr std::size_t page_block = detail::quest_page_block;

  static result<quest_index> make(const quest_config& c) {
    MNEMO_RETURN_IF_ERROR(c.validate());
    quest_index ix;
    ix.cfg_ = c;
    return ix;
  }

  const quest_config& config() const noexcept { return cfg_; }
  std::size_t n_cells() const noexcept { return n_cells_; }
  std::size_t n_pages() const noexcept { return (n_cells_ + cfg_.page_size - 1) / cfg_.page_size; }
  /// Page sets per step: n_head_kv with per_head, else 1.
  std::size_t n_sets() const noexcept { return cfg_.per_head ? cfg_.n_head_kv : 1; }

  /// Appends the key of the next cell, k: [n_head_kv, d_k] f32 (post-RoPE). The
  /// page's min/max are updated in place: O(n_head_kv * d_k) per token.
  void append(const float* k) {
    const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k, B = page_block;
    const std::size_t page = n_cells_ / cfg_.page_size, lane = page % B;
    const bool first = n_cells_ % cfg_.page_size == 0;
    if (first && lane == 0) meta_.resize(meta_.size() + H * d * 2 * B, 0.0f);
    float* blk = meta_.data() + (page / B) * H * d * 2 * B;
    for (std::size_t i = 0; i < H * d; ++i) {
      float* lo = blk + i * 2 * B + lane;
      float* hi = lo + B;
      *lo = first ? k[i] : std::min(*lo, k[i]);
      *hi = first ? k[i] : std::max(*hi, k[i]);
    }
    ++n_cells_;
  }
  void clear() noexcept {
    n_cells_ = 0;
    meta_.clear();
  }

  /// Channel c's minimum / maximum over the keys of KV head h in `page`.
  float page_min(std::size_t page, std::size_t h, std::size_t c) const noexcept {
    return meta_[meta_index(page, h, c)];
  }
  float page_max(std::size_t page, std::size_t h, std::size_t c) const noexcept {
    return meta_[meta_index(page, h, c) + page_block];
  }
  /// Bytes of page metadata a select() reads: whole blocks of page_block pages.
  std::size_t metadata_bytes() const noexcept { return meta_.size() * sizeof(float); }

  /// The bound U(q, page) of KV head h's page for one query row q: [d_k]; the number
  /// select() computes (channels in order, one FMA each).
  float bound(std::size_t page, std::size_t h, const float* q) const noexcept {
    float u = 0.0f;
    for (std::size_t c = 0; c < cfg_.d_k; ++c)
      u = std::fma(q[c] < 0.0f ? q[c] : 0.0f, page_min(page, h, c),
                   std::fma(q[c] > 0.0f ? q[c] : 0.0f, page_max(page, h, c), u));
    return u;
  }

  /// Selects the pages one decode row reads. q: [n_head, d_k] (n_head = n_head_kv *
  /// group, head-major). Afterwards selected(set) lists each set's pages in increasing
  /// order: min(top_pages, n_pages()) of them, the newest page always among them.
  /// One pass over the metadata per set, vectorised across pages; the top pages by a
  /// partial selection over (bound, page) keys; no allocation once warm.
  template <class Isa = simd::native>
  void select(const float* q, std::size_t group) {
    const std::size_t np = n_pages(), k = std::min(cfg_.top_pages, np), sets = n_sets();
    const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k, B = page_block;
    const std::size_t heads_per_set = cfg_.per_head ? 1 : H, n_blocks = (np + B - 1) / B;
    k_ = k;
    sel_.resize(sets * k);
    if (k == 0) return;
    qpm_.resize(H * group * d * 2);  // [n_head, d_k, (q+, q-)]
    for (std::size_t i = 0; i < H * group * d; ++i) {
      qpm_[2 * i] = q[i] > 0.0f ? q[i] : 0.0f;
      qpm_[2 * i + 1] = q[i] < 0.0f ? q[i] : 0.0f;
    }
    score_.resize(n_blocks * B);
    key_.resize(np);
    for (std::size_t s = 0; s < sets; ++s) {
      std::fill(score_.begin(), score_.end(), -std::numeric_limits<float>::infinity());
      for (std::size_t b = 0; b < n_blocks; ++b)
        for (std::size_t hh = 0; hh < heads_per_set; ++hh) {
          const std::size_t h = s * heads_per_set + hh;
          detail::quest_block_bounds<Isa>(meta_.data() + (b * H + h) * d * 2 * B,
                                          qpm_.data() + h * group * d * 2, group, d,
                                          score_.data() + b * B);
        }
      score_[np - 1] = std::numeric_limits<float>::infinity();  // the newest page is read
      // Larger key = read first: the bound's order-preserving bits, then the older page.
      for (std::size_t p = 0; p < np; ++p)
        key_[p] = std::uint64_t{ordered_bits(score_[p])} << 32 | (0xffffffffu - p);
      if (k < np)
        std::nth_element(key_.begin(), key_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                         key_.end(), std::greater<>{});
      std::uint32_t* out = sel_.data() + s * k;
      for (std::size_t i = 0; i < k; ++i)
        out[i] = static_cast<std::uint32_t>(0xffffffffu - (key_[i] & 0xffffffffu));
      std::sort(out, out + k);
    }
  }
  /// The pages set `s` reads after select() (increasing).
  std::span<const std::uint32_t> selected(std::size_t s) const noexcept {
    return std::span<const std::uint32_t>(sel_).subspan(s * k_, k_);
  }
  /// Cells set `s` reads after select() (the newest page may be partial).
  std::size_t selected_cells(std::size_t s) const noexcept {
    std::size_t n = 0;
    for (std::uint32_t p : selected(s))
      n += std::min(cfg_.page_size, n_cells_ - p * cfg_.page_size);
    return n;
  }

 private:
  std::size_t meta_index(std::size_t page, std::size_t h, std::size_t c) const noexcept {
    const std::size_t B = page_block;
    return (((page / B) * cfg_.n_head_kv + h) * cfg_.d_k + c) * 2 * B + page % B;
  }
  /// The float's bits mapped so that unsigned order is the float order (-0 < +0).
  static std::uint32_t ordered_bits(float x) noexcept {
    const auto u = std::bit_cast<std::uint32_t>(x);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
  }

  quest_config cfg_;
  std::size_t n_cells_ = 0, k_ = 0;
  std::vector<float> meta_;         // [n_blocks, n_head_kv, d_k, (min, max), page_block]
  std::vector<std::uint32_t> sel_;  // [n_sets, k_]
  std::vector<float> qpm_;          // scratch [n_head, d_k, 2]
  std::vector<float> score_;        // scratch [n_blocks * page_block]
  std::vector<std::uint64_t> key_;  // scratch [n_pages]
};
static_assert(read_selector<quest_index>);

}  // namespace mnemo::evict
