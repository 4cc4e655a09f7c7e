// Budget schedules across layers. PyramidKV (Cai et al. 2024, arXiv 2406.02069):
// lower layers attend broadly and upper layers concentrate on few tokens, so the
// budget falls arithmetically from the first layer to the last, with the same total
// as a uniform budget. Feed the result to memory::bounded_config::layer_budgets.
#pragma once

#include <cstddef>
#include <vector>

namespace mnemo::evict {

/// n_layer budgets averaging `mean`: the last layer gets mean / beta, the first
/// 2 * mean - mean / beta, linear in between (the paper's beta is 20). Rounding
/// goes to the lower layers so the sum is exactly n_layer * mean.
inline std::vector<std::size_t> pyramid_budgets(std::size_t n_layer, std::size_t mean,
                                                double beta = 20.0) {
  std::vector<std::size_t> b(n_layer, mean);
  if (n_layer < 2 || beta <= 1.0) return b;
  const double top = static_cast<double>(mean) / beta,
               bottom = 2.0 * static_cast<double>(mean) - top;
  std::size_t sum = 0;
  for (std::size_t l = 0; l < n_layer; ++l) {
    const double x =
        bottom + (top - bottom) * static_cast<double>(l) / static_cast<double>(n_layer - 1);
    sum += b[l] = static_cast<std::size_t>(x);
  }
  for (std::size_t l = 0; sum < n_layer * mean; l = (l + 1) % n_layer, ++sum) ++b[l];
  return b;
}

}  // namespace mnemo::evict
