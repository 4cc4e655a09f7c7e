// Rotary position embedding (Su et al. 2021, "RoFormer") on one head row, used by
// the model on fresh keys and queries and by the memory to re-rotate cached keys
// after a position shift (R(a) R(b) = R(a + b), so shifting by delta is one more
// rotation by delta).
#pragma once

#include <algorithm>
#include <array>
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

/// YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension"): pairs that turn
/// fast keep their extrapolated angle, slow ones take the interpolated one, with a linear
/// ramp between the pair dims where beta_fast and beta_slow rotations fit into
/// n_ctx_orig positions; ext_factor 0 switches it off (ggml_rope_yarn_corr_dims).
struct rope_yarn {
  float ext_factor = 0.0f;   // weight of the ramp (1 for YaRN, 0: off)
  float attn_factor = 1.0f;  // multiplies cos and sin (ggml's mscale)
  float beta_fast = 32.0f;   // rotations in n_ctx_orig where extrapolation starts
  float beta_slow = 1.0f;    // rotations in n_ctx_orig where interpolation ends
  std::uint32_t n_ctx_orig = 0;
};

struct rope_config {
  rope_layout layout = rope_layout::normal;
  std::size_t n_rot = 0;  // leading dims of each head that rotate (<= head size, even)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position interpolation: theta uses pos * freq_scale
  // [n_rot / 2] divisors of each pair's angle (Llama 3 `rope_freqs`); empty: all 1.
  std::vector<float> freq_factors;
  rope_yarn yarn;

  status validate(std::size_t head_dim) const {
    if (layout == rope_layout::none) return {};
    if (n_rot == 0 || n_rot % 2 != 0 || n_rot > head_dim)
      return make_status(status_code::invalid_argument,
                         "rope: n_rot (%zu) must be even and in (0, head size %zu]", n_rot,
                         head_dim);
    if (!(freq_base > 0.0f) || !(freq_scale > 0.0f))
      return make_status(status_code::invalid_argument,
                         "rope: freq_base and freq_scale must be > 0");
    if (!freq_factors.empty() && freq_factors.size() != n_rot / 2)
      return make_status(status_code::invalid_argument,
                         "rope: %zu frequency factors for %zu rotated pairs", freq_factors.size(),
                         n_rot / 2);
    for (float f : freq_factors)
      if (!(f > 0.0f) || !std::isfinite(f))
        return make_status(status_code::invalid_argument,
                           "rope: frequency factors must be finite and > 0 (got %g)",
                           static_cast<double>(f));
    if (yarn.ext_factor != 0.0f &&
        (yarn.n_ctx_orig == 0 || !(yarn.beta_fast > 0.0f) || !(yarn.beta_slow > 0.0f)))
      return make_status(status_code::invalid_argument,
                         "rope: YaRN needs n_ctx_orig > 0 and beta_fast, beta_slow > 0");
    return {};
  }

  float factor(std::size_t pair) const noexcept {
    return freq_factors.empty() ? 1.0f : freq_factors[pair];
  }

  /// [low, high] pair indices of the YaRN ramp, as ggml_rope_yarn_corr_dims computes
  /// them in float: the pair dim where `beta` rotations fit into n_ctx_orig positions,
  /// floored (beta_fast) and ceiled (beta_slow), clamped to [0, n_rot - 1].
  std::array<float, 2> yarn_corr_dims() const noexcept {
    const auto corr_dim = [&](float beta) {
      return static_cast<float>(n_rot) *
             std::log(static_cast<float>(yarn.n_ctx_orig) / (beta * 2.0f * 3.14159265358979f)) /
             (2.0f * std::log(freq_base));
    };
    const float lo = std::floor(corr_dim(yarn.beta_fast));
    const float hi = std::ceil(corr_dim(yarn.beta_slow));
    return {std::max(0.0f, lo), std::min(static_cast<float>(n_rot) - 1.0f, hi)};
  }

  /// YaRN's ramp weight of pair i: 1 below the low corr dim (extrapolate), 0 above the
  /// high one (interpolate), linear between; times ext_factor.
  float yarn_mix(std::size_t pair) const noexcept {
    if (yarn.ext_factor == 0.0f) return 0.0f;
    const auto [lo, hi] = yarn_corr_dims();
    const float y = (static_cast<float>(pair) - lo) / std::max(0.001f, hi - lo);
    return (1.0f - std::min(1.0f, std::max(0.0f, y))) * yarn.ext_factor;
  }

  /// What cos and sin are multiplied by: attn_factor, and YaRN's 1 + 0.1 ln(1/s) when
  /// YaRN is on (ggml rope_yarn). A K-shift rotates only, so it never applies this.
  float magnitude() const noexcept {
    if (yarn.ext_factor == 0.0f) return yarn.attn_factor;
    return yarn.attn_factor * (1.0f + 0.1f * std::log(1.0f / freq_scale));
  }

  /// Pair i's angle per position, in double: base^(-2i/n_rot) / factor_i, interpolated
  /// by freq_scale and mixed back toward extrapolation by YaRN's ramp. Angles are linear
  /// in the position, so a shift by delta is one more rotation by delta times this.
  double pair_frequency(std::size_t pair) const noexcept {
    return pair_frequency(pair, std::log(static_cast<double>(freq_base)));
  }
  /// The same with log(freq_base) given: a table of every pair takes the log once.
  double pair_frequency(std::size_t pair, double log_base) const noexcept {
    const double extrap =
        std::exp(-log_base * static_cast<double>(2 * pair) / static_cast<double>(n_rot)) /
        static_cast<double>(factor(pair));
    double mix = 0.0;
    if (yarn.ext_factor != 0.0f) {  // yarn_mix in double: shifts by large deltas stay exact
      const auto [lo, hi] = yarn_corr_dims();
      const double y =
          (static_cast<double>(pair) - lo) / std::max(0.001, static_cast<double>(hi - lo));
      mix = (1.0 - std::min(1.0, std::max(0.0, y))) * yarn.ext_factor;
    }
    return extrap * (static_cast<double>(freq_scale) * (1.0 - mix) + mix);
  }
};

/// The (cos, sin) of every rotated pair at one position: pair i turns by
/// p * pair_frequency(i). Angles in double so that large positions keep f32 accuracy.
/// A table serves every head (and every cell shifted by the same delta): the
/// trigonometry is the expensive part.
struct rope_table {
  std::vector<float> cos, sin;  // [n_rot / 2]

  rope_table() = default;
  rope_table(const rope_config& r, double p) { fill(r, p); }

  /// The angles of position p, in place (no allocation once the table has n_rot / 2 pairs).
  void fill(const rope_config& r, double p) {
    cos.resize(r.n_rot / 2);
    sin.resize(r.n_rot / 2);
    const double log_base = std::log(static_cast<double>(r.freq_base));
    for (std::size_t i = 0; i < cos.size(); ++i) {
      const double theta = p * r.pair_frequency(i, log_base);
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
