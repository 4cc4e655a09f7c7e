// The (cos, sin) of every rotated pair of a micro-batch's tokens, computed as ggml does
// (ggml_rope_cache_init / rope_yarn), and the rotation of one head with them. The model
// rotates fresh queries and keys with these; the memory re-rotates cached keys with
// attention::rope_table (angles in double), which agrees to f32 rounding.
//
// Angle of pair i at position p, in float:
//   theta_e = p * base^(-2i/n_rot) / factor_i     (a running product, as ggml)
//   theta   = s * theta_e                          (s = freq_scale, linear interpolation)
//   YaRN:     theta = theta (1 - mix_i) + theta_e mix_i, and cos, sin scaled by
//             attn_factor * (1 + 0.1 ln(1/s))      (Peng et al. 2023, §3.3-3.4)
// Measured against the fixtures: the float running product halves the difference to
// llama.cpp at position 300 compared with angles in double.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/seq_set.hpp"

namespace mnemo::model {

/// cs [n, n_rot]: (cos, sin) of pair i at cs[t * n_rot + 2i], for the n positions.
inline void fill_rope_cache(const attention::rope_config& r, const pos_t* pos, std::size_t n,
                            float* cs) noexcept {
  const std::size_t n_rot = r.n_rot;
  const float theta_scale = std::pow(r.freq_base, -2.0f / static_cast<float>(n_rot));
  const float magnitude = r.magnitude();
  for (std::size_t t = 0; t < n; ++t) {
    float theta = static_cast<float>(pos[t]);
    float* row = cs + t * n_rot;
    for (std::size_t i = 0; i < n_rot; i += 2) {
      const float extrap = theta / r.factor(i / 2);
      const float interp = r.freq_scale * extrap;
      const float mix = r.yarn_mix(i / 2);
      const float a = mix == 0.0f ? interp : interp * (1.0f - mix) + extrap * mix;
      row[i] = std::cos(a) * magnitude;
      row[i + 1] = std::sin(a) * magnitude;
      theta *= theta_scale;
    }
  }
}

/// Rotates the first n_rot dims of one head x [d] by a rope cache row cs [n_rot]:
/// normal mode pairs (2i, 2i + 1), NeoX mode (i, i + n_rot / 2); the rest unchanged.
inline void rotate_head(attention::rope_layout layout, std::size_t n_rot, const float* cs,
                        float* x) noexcept {
  if (layout == attention::rope_layout::none) return;
  const std::size_t half = n_rot / 2;
  const bool normal = layout == attention::rope_layout::normal;
  for (std::size_t i = 0; i < half; ++i) {
    const std::size_t a = normal ? 2 * i : i, b = normal ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b], c = cs[2 * i], s = cs[2 * i + 1];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}

}  // namespace mnemo::model
