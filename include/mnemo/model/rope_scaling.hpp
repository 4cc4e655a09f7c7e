// RoPE scaling as GGUF metadata names it (`ARCH.rope.scaling.type`), read into an
// attention::rope_config:
//   none     angles unchanged
//   linear   positions interpolated: freq_scale = 1 / rope.scaling.factor
//            (older files: rope.scale_linear)
//   yarn     freq_scale = 1 / factor, plus YaRN's ramp over the pairs (Peng et al. 2023):
//            rope.scaling.original_context_length (default context_length),
//            yarn_ext_factor (1), yarn_attn_factor (1), yarn_beta_fast (32),
//            yarn_beta_slow (1), as llama.cpp reads them
//   llama3   per-pair divisors (Llama 3.1, Meta's `rope_type: llama3`) from
//            rope.scaling.factor (8), low_freq_factor (1), high_freq_factor (4) and
//            original_context_length (8192)
// and a `rope_freqs.weight` tensor [n_rot / 2] of per-pair divisors, which converted
// Llama 3.1 / 3.2 files carry instead of any key (it wins over computed llama3 factors).
// LongRoPE and unknown types are refused.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "mnemo/attention/rope.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/hparams_common.hpp"
#include "mnemo/model/tensor_binder.hpp"

namespace mnemo::model {

/// Llama 3.1's divisors of each pair's angle: 1 for wavelengths below
/// n_ctx_orig / high, `factor` above n_ctx_orig / low, and a smooth blend between.
inline std::vector<float> llama3_rope_factors(std::size_t n_rot, float freq_base, float factor,
                                              float low, float high, float n_ctx_orig) {
  std::vector<float> f(n_rot / 2);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double freq = std::pow(static_cast<double>(freq_base),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
    const double wavelen = 2.0 * 3.14159265358979323846 / freq;
    if (wavelen < n_ctx_orig / high) {
      f[i] = 1.0f;
    } else if (wavelen > n_ctx_orig / low) {
      f[i] = factor;
    } else {
      const double smooth = (n_ctx_orig / wavelen - low) / (high - low);
      f[i] = static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth));
    }
  }
  return f;
}

/// Reads the scaling keys and rope_freqs.weight into r (n_rot and freq_base already
/// set). n_ctx_train is the default original context of YaRN.
inline status read_rope_scaling(const detail::arch_keys::reader& k, const gguf::file& f,
                                std::uint32_t n_ctx_train, attention::rope_config& r) {
  const std::string who(k.key("rope.scaling"));
  std::string_view type = "none";
  if (const gguf::kv* kv = k.find("rope.scaling.type")) {
    MNEMO_ASSIGN_OR_RETURN(type, kv->get<std::string_view>());
  } else {
    MNEMO_ASSIGN_OR_RETURN(float linear, k.f32("rope.scale_linear", 1.0f));
    if (linear > 0.0f) r.freq_scale = 1.0f / linear;
  }
  if (type == "linear" || type == "yarn") {
    MNEMO_ASSIGN_OR_RETURN(float factor, k.f32("rope.scaling.factor", 1.0f));
    if (factor > 0.0f) r.freq_scale = 1.0f / factor;
  }
  if (type == "yarn") {
    MNEMO_ASSIGN_OR_RETURN(r.yarn.n_ctx_orig,
                           k.u32("rope.scaling.original_context_length", n_ctx_train));
    MNEMO_ASSIGN_OR_RETURN(r.yarn.ext_factor, k.f32("rope.scaling.yarn_ext_factor", 1.0f));
    if (r.yarn.ext_factor < 0.0f) r.yarn.ext_factor = 1.0f;  // llama.cpp: negative = default
    MNEMO_ASSIGN_OR_RETURN(r.yarn.attn_factor, k.f32("rope.scaling.yarn_attn_factor", 1.0f));
    MNEMO_ASSIGN_OR_RETURN(r.yarn.beta_fast, k.f32("rope.scaling.yarn_beta_fast", 32.0f));
    MNEMO_ASSIGN_OR_RETURN(r.yarn.beta_slow, k.f32("rope.scaling.yarn_beta_slow", 1.0f));
  } else if (type == "llama3") {
    MNEMO_ASSIGN_OR_RETURN(float factor, k.f32("rope.scaling.factor", 8.0f));
    MNEMO_ASSIGN_OR_RETURN(float low, k.f32("rope.scaling.low_freq_factor", 1.0f));
    MNEMO_ASSIGN_OR_RETURN(float high, k.f32("rope.scaling.high_freq_factor", 4.0f));
    MNEMO_ASSIGN_OR_RETURN(std::uint32_t orig, k.u32("rope.scaling.original_context_length", 8192));
    if (!(factor > 0.0f) || !(low > 0.0f) || !(high > low) || orig == 0)
      return make_status(status_code::invalid_argument,
                         "%s: llama3 scaling needs factor > 0, 0 < low_freq_factor < "
                         "high_freq_factor and original_context_length > 0 (got %g, %g, %g, %u)",
                         who.c_str(), static_cast<double>(factor), static_cast<double>(low),
                         static_cast<double>(high), orig);
    r.freq_factors =
        llama3_rope_factors(r.n_rot, r.freq_base, factor, low, high, static_cast<float>(orig));
  } else if (type != "none" && type != "linear") {
    return make_status(status_code::unsupported,
                       "%s.type '%.*s' is not supported (none, linear, "
                       "yarn, llama3)",
                       who.c_str(), static_cast<int>(type.size()), type.data());
  }
  if (f.find_tensor("rope_freqs.weight") != nullptr) {
    const tensor_binder bind(f, "rope_freqs");
    MNEMO_ASSIGN_OR_RETURN(r.freq_factors, bind.norm("rope_freqs.weight", r.n_rot / 2));
  }
  return {};
}

}  // namespace mnemo::model
