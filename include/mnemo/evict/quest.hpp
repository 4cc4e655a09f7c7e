// Quest (Tang et al., ICML 2024, arXiv 2406.10774): query-aware page selection, a
// read policy, not an eviction. The cells of a stream are cut into pages of
// `page_size`; each page keeps, per KV head and key channel, the minimum m and the
// maximum M of its keys (post-RoPE, as cached), updated when a cell is appended. A
// decode step bounds every page's logit by
//   U(q, page) = sum_c max(q_c m_c, q_c M_c)  >=  q . k  for every key k of the page
// and reads only the `top_pages` pages with the largest bound. Nothing is freed.
// m and M are kept as bf16 rounded outward (m down, M up): still bounds of the keys, in
// half the bytes of f32. On a CPU with AVX512_BF16 the bounds are bf16 dot products
// (the query's two halves rounded to bf16; the paper's kernels score pages in fp16):
// half the instructions, a bound of the rounded query (bf16_bounds = false: of the
// f32 query, on every CPU).
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
#include <type_traits>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/evict/detail/quest_bounds.hpp"
#include "mnemo/simd/cpu.hpp"
#include "mnemo/simd/half.hpp"

namespace mnemo::evict {

struct quest_config {
  std::size_t page_size = 16;  // cells per page
  std::size_t top_pages = 64;  // pages read per decode step (the newest page included)
  std::size_t n_head_kv = 1, d_k = 0;
  bool per_head = true;  // false: one page set for every KV head of the layer
  /// Bounds as bf16 dot products where select()'s ISA is AVX-512 and the CPU has
  /// AVX512_BF16; false: f32 bounds of the exact query everywhere.
  bool bf16_bounds = true;

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
/// Cost of a step: one bound per page per query head, 2 d_k FMAs (d_k bf16 pair
/// products with bf16 bounds), against attention's 2 d_k FMAs per query head and read
/// cell: about n_pages / (top_pages x page_size) of the attention's arithmetic (half
/// that in bf16); docs/eviction.md has the measured shares.
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
  /// page's min/max are updated in place: O(n_head_kv * d_k) per token. Rounding
  /// outward is monotone, so the running bf16 min / max is the rounded min / max.
  void append(const float* k) {
    const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k, B = page_block;
    const std::size_t page = n_cells_ / cfg_.page_size, lane = page % B;
    const bool first = n_cells_ % cfg_.page_size == 0;
    if (first && lane == 0) meta_.resize(meta_.size() + H * d * B, 0u);
    std::uint32_t* blk = meta_.data() + (page / B) * H * d * B;
    for (std::size_t i = 0; i < H * d; ++i) {
      std::uint32_t& w = blk[i * B + lane];
      std::uint16_t lo = simd::f32_to_bf16_bits_floor(k[i]), hi = simd::f32_to_bf16_bits_ceil(k[i]);
      if (!first) {
        // std::min / std::max's choice: the new value only when strictly beyond.
        if (!(simd::bf16_bits_to_f32(lo) < simd::bf16_bits_to_f32(low_half(w)))) lo = low_half(w);
        if (!(simd::bf16_bits_to_f32(high_half(w)) < simd::bf16_bits_to_f32(hi))) hi = high_half(w);
      }
      w = std::uint32_t{hi} << 16 | lo;
    }
    ++n_cells_;
  }
  void clear() noexcept {
    n_cells_ = 0;
    meta_.clear();
  }

  /// Channel c's minimum / maximum over the keys of KV head h in `page`, rounded
  /// outward to bf16 (the minimum down, the maximum up).
  float page_min(std::size_t page, std::size_t h, std::size_t c) const noexcept {
    return simd::bf16_bits_to_f32(low_half(meta_[meta_index(page, h, c)]));
  }
  float page_max(std::size_t page, std::size_t h, std::size_t c) const noexcept {
    return simd::bf16_bits_to_f32(high_half(meta_[meta_index(page, h, c)]));
  }
  /// Bytes of page metadata a select() reads: whole blocks of page_block pages.
  std::size_t metadata_bytes() const noexcept { return meta_.size() * sizeof(std::uint32_t); }

  /// The bound U(q, page) of KV head h's page for one query row q: [d_k]; the number
  /// select() computes with f32 bounds (channels in order, one rounding per FMA).
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
  /// One pass over the metadata for every set, vectorised across pages; the top pages
  /// by a partial selection over (bound, page) keys; no allocation once warm. The
  /// bounds are bf16 dot products when bf16_bounds<Isa>() holds.
  template <class Isa = simd::native>
  void select(const float* q, std::size_t group) {
    const std::size_t np = n_pages(), k = std::min(cfg_.top_pages, np), sets = n_sets();
    const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k, B = page_block;
    const std::size_t n_blocks = (np + B - 1) / B;
    k_ = k;
    scored_pages_ = np;
    sel_.resize(sets * k + 1);
    score_stride_ = n_blocks * B;
    score_.assign(sets * score_stride_, -std::numeric_limits<float>::infinity());
    if (k == 0) return;
    const bool bf16 = bf16_bounds<Isa>();
    if (bf16) {
      qw_.resize(H * group * d);  // [n_head, d_k] words (q- low, q+ high)
      for (std::size_t i = 0; i < H * group * d; ++i)
        qw_[i] = std::uint32_t{simd::f32_to_bf16_bits(q[i] > 0.0f ? q[i] : 0.0f)} << 16 |
                 simd::f32_to_bf16_bits(q[i] < 0.0f ? q[i] : 0.0f);
    } else {
      qpm_.resize(H * group * d * 2);  // [n_head, d_k, (q+, q-)]
      for (std::size_t i = 0; i < H * group * d; ++i) {
        qpm_[2 * i] = q[i] > 0.0f ? q[i] : 0.0f;
        qpm_[2 * i + 1] = q[i] < 0.0f ? q[i] : 0.0f;
      }
    }
    // Every head's bounds first, in the metadata's order (blocks, then heads within a
    // block): one pass over it front to back.
    for (std::size_t b = 0; b < n_blocks;) {
      const std::size_t nb = bf16 && b + 2 <= n_blocks ? 2 : 1;
      for (std::size_t h = 0; h < H; ++h) {
        float* score = score_.data() + (cfg_.per_head ? h : 0) * score_stride_ + b * B;
        if (bf16)
          bounds_bf16<Isa>(b, nb, h, group, score);
        else
          detail::quest_block_bounds<Isa>(meta_.data() + (b * H + h) * d * B,
                                          qpm_.data() + h * group * d * 2, group, d, score);
      }
      b += nb;
    }
    key_.resize(np);
    for (std::size_t s = 0; s < sets; ++s) {
      float* score = score_.data() + s * score_stride_;
      score[np - 1] = std::numeric_limits<float>::infinity();  // the newest page is read
      // Keys are distinct (the page is in them): exactly k pages have a key at or above
      // the k-th largest, and a scan in page order lists them increasing.
      std::uint64_t kth = 0;
      if (k < np) {
        for (std::size_t p = 0; p < np; ++p) key_[p] = page_key(score[p], p);
        std::nth_element(key_.begin(), key_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                         key_.end(), std::greater<>{});
        kth = key_[k - 1];
      }
      std::uint32_t* out = sel_.data() + s * k;  // sel_ has one slot past the last set
      for (std::size_t p = 0, i = 0; p < np; ++p) {
        out[i] = static_cast<std::uint32_t>(p);  // kept when its key qualifies
        i += page_key(score[p], p) >= kth;
      }
    }
  }
  /// The pages set `s` reads after select() (increasing).
  std::span<const std::uint32_t> selected(std::size_t s) const noexcept {
    return std::span<const std::uint32_t>(sel_).subspan(s * k_, k_);
  }
  /// Each page's score in set `s` at the last select() (the largest bound over the
  /// set's query heads; the newest page's +inf), one per page held then.
  std::span<const float> scores(std::size_t s) const noexcept {
    return std::span<const float>(score_).subspan(s * score_stride_, scored_pages_);
  }
  /// Whether select<Isa>() computes bf16 bounds: config().bf16_bounds, Isa AVX-512
  /// and a CPU with AVX512_BF16.
  template <class Isa = simd::native>
  bool bf16_bounds() const noexcept {
#if defined(MNEMO_ARCH_X86_64)
    if constexpr (std::is_same_v<Isa, simd::avx512>)
      return cfg_.bf16_bounds && simd::detail::cpu().avx512_bf16;
#endif
    return false;
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
    return (((page / B) * cfg_.n_head_kv + h) * cfg_.d_k + c) * B + page % B;
  }
  static std::uint16_t low_half(std::uint32_t w) noexcept { return static_cast<std::uint16_t>(w); }
  static std::uint16_t high_half(std::uint32_t w) noexcept {
    return static_cast<std::uint16_t>(w >> 16);
  }
  /// KV head h's bf16 bounds of blocks [b, b + nb), nb 1 or 2, into score (two blocks
  /// at a time: the instruction's latency wants more independent sums than one block's
  /// rows give).
  template <class Isa>
  void bounds_bf16([[maybe_unused]] std::size_t b, [[maybe_unused]] std::size_t nb,
                   [[maybe_unused]] std::size_t h, [[maybe_unused]] std::size_t group,
                   [[maybe_unused]] float* score) noexcept {
#if defined(MNEMO_ARCH_X86_64)
    if constexpr (std::is_same_v<Isa, simd::avx512>) {
      const std::size_t H = cfg_.n_head_kv, d = cfg_.d_k, B = page_block, stride = H * d * B;
      const std::uint32_t* meta = meta_.data() + b * stride + h * d * B;
      const std::uint32_t* qh = qw_.data() + h * group * d;
      if (nb == 2)
        detail::quest_block_bounds_bf16<2>(meta, stride, qh, group, d, score);
      else
        detail::quest_block_bounds_bf16<1>(meta, stride, qh, group, d, score);
    }
#endif
  }
  /// Larger key = read first: the score's order-preserving bits, then the older page.
  static std::uint64_t page_key(float score, std::size_t page) noexcept {
    return std::uint64_t{ordered_bits(score)} << 32 | (0xffffffffu - page);
  }
  /// The float's bits mapped so that unsigned order is the float order (-0 < +0).
  static std::uint32_t ordered_bits(float x) noexcept {
    const auto u = std::bit_cast<std::uint32_t>(x);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
  }

  quest_config cfg_;
  std::size_t n_cells_ = 0, k_ = 0, score_stride_ = 0, scored_pages_ = 0;
  std::vector<std::uint32_t> meta_;  // [n_blocks, n_head_kv, d_k, page_block] (min, max)
  std::vector<std::uint32_t> sel_;   // [n_sets, k_] and one slot past (the scan's)
  std::vector<float> qpm_;           // scratch [n_head, d_k, 2] (f32 bounds)
  std::vector<std::uint32_t> qw_;    // scratch [n_head, d_k] (bf16 bounds)
  std::vector<float> score_;         // [n_sets, score_stride_]: the last select()'s scores
  std::vector<std::uint64_t> key_;   // scratch [n_pages], partially ordered by select()
};
static_assert(read_selector<quest_index>);

}  // namespace mnemo::evict
