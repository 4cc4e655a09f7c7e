// Rotary position embedding (Su et al. 2021, "RoFormer") on one head row, used by
// the model on fresh keys and queries and by the memory to re-rotate cached keys
// after a position shift (R(a) R(b) = R(a + b), so shifting by delta is one more
// rotation by delta).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnemo/base/seq_set.hpp"
#include "mnemo/base/status.hpp"

namespace mnemo::attention {

enum class rope_layout : std::uint8_t {
  none,    // no rotary embedding (e.g. ALiBi): a shift rotates nothing
  normal,  // pairs (2i, 2i + 1)  (GGUF llama)
  neox,    // pairs (i, i + n_rot / 2)  (GPT-NeoX, Gemma, ...)
};

struct rope_config {
  rope_layout layout = rope_layout::normal;
  std::size_t n_rot = 0;  // leading dims of each head that rotate (<= head size, even)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position interpolation: theta uses pos * freq_scale

  status validate(std::size_t head_dim) const {
    if (layout == rope_layout::none) return {};
    if (n_rot == 0 || n_rot % 2 != 0 || n_rot > head_dim)
      return make_status(status_code::invalid_argument,
                         "rope: n_rot (%zu) must be even and in (0, head size %zu]", n_rot,
                         head_dim);
    if (!(freq_base > 0.0f) || !(freq_scale > 0.0f))
      return make_status(status_code::invalid_argument,
                         "rope: freq_base and freq_scale must be > 0");
    return {};
  }
};

/// The (cos, sin) of every rotated pair at one position: pair i turns by
/// p * freq_scale * freq_base^(-2i / n_rot). Angles in double so that large
/// positions keep f32 accuracy. A table serves every head (and every cell shifted by
/// the same delta): the trigonometry is the expensive part.
struct rope_table {
  std::vector<float> cos, sin;  // [n_rot / 2]

  rope_table(const rope_config& r, double p) : cos(r.n_rot / 2), sin(r.n_rot / 2) {
    const double base_log = std::log(static_cast<double>(r.freq_base));
    for (std::size_t i = 0; i < cos.size(); ++i) {
      const double theta =
          p * r.freq_scale *
          std::exp(-base_log * static_cast<double>(2 * i) / static_cast<double>(r.n_rot));
      cos[i] = static_cast<float>(std::cos(theta));
      sin[i] = static_cast<float>(std::sin(theta));
    }
  }
};

/// Rotates the first n_rot dims of x [head_dim] by the table's angles, pairing
/// dims as the layout says.
inline void rope_apply(const rope_config& r, const rope_table& t, float* x) noexcept {
  if (r.layout == rope_layout::none) return;
  const std::size_t half = r.n_rot / 2;
  const bool normal = r.layout == rope_layout::normal;
  for (std::size_t i = 0; i < half; ++i) {
    const std::size_t a = normal ? 2 * i : i, b = normal ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * t.cos[i] - x1 * t.sin[i];
    x[b] = x0 * t.sin[i] + x1 * t.cos[i];
  }
}

/// Rotates the first n_rot dims of x [head_dim] by position p.
inline void rope_rotate(const rope_config& r, float* x, double p) {
  if (r.layout == rope_layout::none || p == 0.0) return;
  rope_apply(r, rope_table(r, p), x);
}

}  // namespace mnemo::attention
