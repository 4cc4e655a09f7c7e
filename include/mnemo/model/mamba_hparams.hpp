// The hyper-parameters of a GGUF `mamba` model (Mamba-1, Gu & Dao 2023), and the
// `ssm.*` block that `jamba` shares with it, read and checked once at load. Keys follow
// llama.cpp's llama_model_mamba::load_arch_hparams (docs/hybrid.md): required
// context_length, embedding_length, block_count, ssm.conv_kernel, ssm.inner_size,
// ssm.state_size, ssm.time_step_rank and attention.layer_norm_rms_epsilon. Every
// refusal is a status naming the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/hparams_common.hpp"
#include "mnemo/ssm/types.hpp"

namespace mnemo::model {

/// The shape of one Mamba-1 mixer.
struct ssm_hparams {
  std::uint32_t d_conv = 0;   // conv taps (ssm.conv_kernel)
  std::uint32_t d_inner = 0;  // channels (ssm.inner_size)
  std::uint32_t d_state = 0;  // states per channel (ssm.state_size)
  std::uint32_t dt_rank = 0;  // low-rank dt width (ssm.time_step_rank)
  bool dt_b_c_rms = false;    // Falcon-Mamba: parameter-free RMS norms on dt, B, C

  /// Floats of one layer's state per sequence (llama.cpp n_embd_r / n_embd_s).
  std::size_t conv_floats() const noexcept { return std::size_t{d_conv - 1} * d_inner; }
  std::size_t ssm_floats() const noexcept { return std::size_t{d_state} * d_inner; }
  /// Width of ssm_x's output: [dt_low | B | C].
  std::size_t xdbc_width() const noexcept { return std::size_t{dt_rank} + 2 * d_state; }
};

struct mamba_hparams {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  float rms_eps = 1e-5f;
  ssm_hparams ssm;
};

/// The four required ssm.* keys and dt_b_c_rms of architecture `arch`, checked:
/// d_inner = 2 n_embd (llama.cpp's load_arch_tensors refuses anything else), d_conv in
/// [2, ssm::k_max_conv], every size > 0.
inline result<ssm_hparams> read_ssm_hparams(const gguf::file& f, std::string_view arch,
                                            std::uint32_t n_embd) {
  const detail::arch_keys::reader r(f, arch);
  ssm_hparams s;
  MNEMO_ASSIGN_OR_RETURN(s.d_conv, r.u32("ssm.conv_kernel", 0, true));
  MNEMO_ASSIGN_OR_RETURN(s.d_inner, r.u32("ssm.inner_size", 0, true));
  MNEMO_ASSIGN_OR_RETURN(s.d_state, r.u32("ssm.state_size", 0, true));
  MNEMO_ASSIGN_OR_RETURN(s.dt_rank, r.u32("ssm.time_step_rank", 0, true));
  MNEMO_ASSIGN_OR_RETURN(s.dt_b_c_rms, r.boolean("ssm.dt_b_c_rms", false));
  if (s.d_conv < 2 || s.d_conv > ssm::k_max_conv || s.d_state == 0 || s.dt_rank == 0)
    return make_status(status_code::invalid_argument,
                       "%.*s: ssm.conv_kernel %u must be in [2, %zu], ssm.state_size %u and "
                       "ssm.time_step_rank %u > 0",
                       static_cast<int>(arch.size()), arch.data(), s.d_conv, ssm::k_max_conv,
                       s.d_state, s.dt_rank);
  if (s.d_inner != 2 * n_embd)
    return make_status(status_code::unsupported,
                       "%.*s: ssm.inner_size %u must be 2 * embedding_length (%u), as llama.cpp "
                       "requires",
                       static_cast<int>(arch.size()), arch.data(), s.d_inner, 2 * n_embd);
  if (s.dt_b_c_rms)
    return make_status(status_code::unsupported,
                       "%.*s: ssm.dt_b_c_rms (Falcon-Mamba's weightless dt/B/C norms) is not "
                       "supported",
                       static_cast<int>(arch.size()), arch.data());
  return s;
}

/// Reads and checks a `mamba` file's hyper-parameters.
inline result<mamba_hparams> read_mamba_hparams(const gguf::file& f) {
  const detail::arch_keys::reader r(f, "mamba");
  MNEMO_RETURN_IF_ERROR(r.check_arch());
  mamba_hparams h;
  MNEMO_RETURN_IF_ERROR(r.trunk(h));
  MNEMO_ASSIGN_OR_RETURN(h.rms_eps, r.f32("attention.layer_norm_rms_epsilon", 0, true));
  MNEMO_ASSIGN_OR_RETURN(h.ssm, read_ssm_hparams(f, "mamba", h.n_embd));
  MNEMO_ASSIGN_OR_RETURN(h.n_vocab, r.vocab());
  return h;
}

}  // namespace mnemo::model
