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
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/evict/concepts.hpp"

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
class quest_index {
 public:
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
    const std::size_t row = cfg_.n_head_kv * cfg_.d_k;
    if (n_cells_ % cfg_.page_size == 0) {
      lo_.insert(lo_.end(), k, k + row);
      hi_.insert(hi_.end(), k, k + row);
    } else {
      float* lo = lo_.data() + (n_pages() - 1) * row;
      float* hi = hi_.data() + (n_pages() - 1) * row;
      for (std::size_t i = 0; i < row; ++i) {
        lo[i] = std::min(lo[i], k[i]);
        hi[i] = std::max(hi[i], k[i]);
      }
    }
    ++n_cells_;
  }
  void clear() noexcept {
    n_cells_ = 0;
    lo_.clear();
    hi_.clear();
  }

  /// [n_pages, n_head_kv, d_k] per-channel minimum / maximum of each page's keys.
  std::span<const float> page_min() const noexcept { return lo_; }
  std::span<const float> page_max() const noexcept { return hi_; }

  /// The bound U(q, page) of KV head h's page for one query row q: [d_k].
  float bound(std::size_t page, std::size_t h, const float* q) const noexcept {
    const std::size_t off = (page * cfg_.n_head_kv + h) * cfg_.d_k;
    const float* lo = lo_.data() + off;
    const float* hi = hi_.data() + off;
    // Eight independent partial sums: a single running sum is a dependency chain the
    // compiler may not reorder (no fast-math), and this loop is Quest's whole cost.
    constexpr std::size_t W = 8;
    float acc[W] = {};
    std::size_t c = 0;
    for (; c + W <= cfg_.d_k; c += W)
      for (std::size_t i = 0; i < W; ++i)
        acc[i] += std::max(q[c + i] * lo[c + i], q[c + i] * hi[c + i]);
    for (; c < cfg_.d_k; ++c) acc[c % W] += std::max(q[c] * lo[c], q[c] * hi[c]);
    float u = 0.0f;
    for (float a : acc) u += a;
    return u;
  }

  /// Selects the pages one decode row reads. q: [n_head, d_k] (n_head = n_head_kv *
  /// group, head-major). Afterwards selected(set) lists each set's pages in increasing
  /// order: min(top_pages, n_pages()) of them, the newest page always among them.
  void select(const float* q, std::size_t group) {
    const std::size_t np = n_pages(), k = std::min(cfg_.top_pages, np), sets = n_sets();
    const std::size_t heads_per_set = cfg_.per_head ? 1 : cfg_.n_head_kv;
    k_ = k;
    sel_.resize(sets * k);
    if (k == 0) return;
    for (std::size_t s = 0; s < sets; ++s) {
      score_.assign(np, -std::numeric_limits<float>::infinity());
      for (std::size_t hh = 0; hh < heads_per_set; ++hh) {
        const std::size_t h = s * heads_per_set + hh;
        for (std::size_t i = 0; i < group; ++i) {
          const float* qr = q + (h * group + i) * cfg_.d_k;
          for (std::size_t p = 0; p < np; ++p) score_[p] = std::max(score_[p], bound(p, h, qr));
        }
      }
      score_[np - 1] = std::numeric_limits<float>::infinity();  // the newest page is read
      order_.resize(np);
      for (std::size_t p = 0; p < np; ++p) order_[p] = static_cast<std::uint32_t>(p);
      auto better = [&](std::uint32_t a, std::uint32_t b) {
        return score_[a] != score_[b] ? score_[a] > score_[b] : a < b;
      };
      if (k < np)
        std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                         order_.end(), better);
      std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k));
      std::copy_n(order_.begin(), k, sel_.begin() + static_cast<std::ptrdiff_t>(s * k));
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
  quest_config cfg_;
  std::size_t n_cells_ = 0, k_ = 0;
  std::vector<float> lo_, hi_;      // [n_pages, n_head_kv, d_k]
  std::vector<std::uint32_t> sel_;  // [n_sets, k_]
  std::vector<float> score_;        // scratch [n_pages]
  std::vector<std::uint32_t> order_;
};
static_assert(read_selector<quest_index>);

}  // namespace mnemo::evict
