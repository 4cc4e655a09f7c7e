// The Mamba-1 mixer (Gu & Dao 2023) shared by the `mamba` and `jamba` decoders: its
// weights bound from a GGUF layer, its activation buffers, and its forward pass over
// one micro-batch, reading and writing each sequence's conv and SSM state in the
// memory. The steps are llama.cpp's build_mamba_layer (docs/hybrid.md):
//   [x ; z] = ssm_in h                       [n, 2 d_inner]
//   xc = silu(conv1d(state ++ x) + b)        [n, d_inner]   per sequence (ssm/conv1d.hpp)
//   [dt_low ; B ; C] = ssm_x xc              [n, dt_rank + 2 d_state]
//   (jamba) dt_low, B, C RMS-normalised with ssm_dt_norm / ssm_b_norm / ssm_c_norm
//   dt = ssm_dt dt_low + ssm_dt.bias         [n, d_inner]
//   y = scan(xc, dt, A, B, C, D) * silu(z)   [n, d_inner]   per sequence (ssm/scan.hpp)
//   out = ssm_out y                          [n, n_embd]
#pragma once

#include <algorithm>
#include <concepts>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/concepts.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/mamba_hparams.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"
#include "mnemo/ssm/ssm.hpp"

namespace mnemo::model {

/// What a recurrent model needs of a memory (memory::recurrent, or a composite routing
/// some layers to one): the sequences of an applied micro-batch, one group of
/// contiguous tokens each, and a layer's state slot for each group.
///   groups(u)               [{seq, first, n}] in micro-batch order
///   layer_state(l, u, k)    model layer l's {conv, ssm} state of group k
template <class M>
concept recurrent_state_memory = memory::sequence_memory<M> &&
    requires(M m, const M cm, std::size_t i) {
  { cm.groups(i) } -> std::convertible_to<std::span<const memory::recurrent::group>>;
  { m.layer_state(i, i, i) } -> std::same_as<memory::recurrent_layer_state>;
};

/// One layer's mixer weights (ggml ne in the comments; matrices are views into the file).
struct mamba_mixer {
  weight in;                  // ssm_in    [n_embd, 2 d_inner]: x rows first, then z
  weight x_proj;              // ssm_x     [d_inner, dt_rank + 2 d_state]
  weight dt;                  // ssm_dt    [dt_rank, d_inner]
  weight out;                 // ssm_out   [d_inner, n_embd]
  std::vector<float> conv_w;  // [d_inner, d_conv], taps oldest first (ggml ne [d_conv, d_inner])
  std::vector<float> conv_b;  // [d_inner]
  std::vector<float> dt_b;    // [d_inner]
  std::vector<float> A;       // [d_inner, d_state], already -exp(A_log)
  std::vector<float> D;       // [d_inner]
  std::vector<float> dt_norm, b_norm, c_norm;  // [dt_rank], [d_state], [d_state]; or empty
};

/// Whether a mixer has the dt/B/C norm tensors: Jamba requires them, Mamba-1 has none.
enum class mixer_norms { none, required };

/// Binds layer `prefix` ("blk.N.")'s mixer, checking every tensor's presence, shape and
/// type. Tensors the forward pass would ignore (biases llama.cpp does not load, norms on
/// a Mamba-1 layer) are refused, not skipped. q4_0 matrices get their tiles in `tiles`.
inline result<mamba_mixer> bind_mamba_mixer(const gguf::file& f, const std::string& prefix,
                                            const ssm_hparams& s, std::uint32_t n_embd,
                                            mixer_norms norms, weight_tiles* tiles = nullptr) {
  const std::size_t E = n_embd, DI = s.d_inner, S = s.d_state, R = s.dt_rank;
  for (const char* extra : {"ssm_in.bias", "ssm_x.bias", "ssm_out.bias"})
    if (f.find_tensor(prefix + extra) != nullptr)
      return make_status(status_code::unsupported, "mamba mixer: tensor '%s%s' is not supported",
                         prefix.c_str(), extra);
  const tensor_binder b(f, {}, tiles);
  mamba_mixer m;
  MNEMO_ASSIGN_OR_RETURN(m.in, b.matrix(prefix + "ssm_in.weight", E, 2 * DI));
  MNEMO_ASSIGN_OR_RETURN(m.x_proj, b.matrix(prefix + "ssm_x.weight", DI, s.xdbc_width()));
  MNEMO_ASSIGN_OR_RETURN(m.dt, b.matrix(prefix + "ssm_dt.weight", R, DI));
  MNEMO_ASSIGN_OR_RETURN(m.out, b.matrix(prefix + "ssm_out.weight", DI, E));
  MNEMO_ASSIGN_OR_RETURN(m.conv_w, b.rows_f32(prefix + "ssm_conv1d.weight", s.d_conv, DI));
  MNEMO_ASSIGN_OR_RETURN(m.conv_b, b.rows_f32(prefix + "ssm_conv1d.bias", DI, 1));
  MNEMO_ASSIGN_OR_RETURN(m.dt_b, b.rows_f32(prefix + "ssm_dt.bias", DI, 1));
  MNEMO_ASSIGN_OR_RETURN(m.A, b.rows_f32(prefix + "ssm_a", S, DI));
  MNEMO_ASSIGN_OR_RETURN(m.D, b.rows_f32(prefix + "ssm_d", DI, 1));
  const char* norm_names[] = {"ssm_dt_norm.weight", "ssm_b_norm.weight", "ssm_c_norm.weight"};
  if (norms == mixer_norms::required) {
    MNEMO_ASSIGN_OR_RETURN(m.dt_norm, b.rows_f32(prefix + norm_names[0], R, 1));
    MNEMO_ASSIGN_OR_RETURN(m.b_norm, b.rows_f32(prefix + norm_names[1], S, 1));
    MNEMO_ASSIGN_OR_RETURN(m.c_norm, b.rows_f32(prefix + norm_names[2], S, 1));
  } else {
    for (const char* n : norm_names)
      if (f.find_tensor(prefix + n) != nullptr)
        return make_status(status_code::unsupported,
                           "mamba mixer: tensor '%s%s' (dt/B/C norms) belongs to another "
                           "architecture",
                           prefix.c_str(), n);
  }
  return m;
}

/// The mixer's activations for micro-batches of up to n_ubatch tokens.
struct mamba_mixer_buffers {
  aligned_buffer<float> xz;    // [n_ubatch, 2 d_inner]
  aligned_buffer<float> xc;    // [n_ubatch, d_inner]
  aligned_buffer<float> xdbc;  // [n_ubatch, dt_rank + 2 d_state]
  aligned_buffer<float> dt;    // [n_ubatch, d_inner]
  aligned_buffer<float> y;     // [n_ubatch, d_inner]

  static result<mamba_mixer_buffers> make(const ssm_hparams& s, std::uint32_t n_ubatch) {
    mamba_mixer_buffers b;
    const std::size_t n = n_ubatch, DI = s.d_inner;
    MNEMO_ASSIGN_OR_RETURN(b.xz, aligned_buffer<float>::make(n * 2 * DI));
    MNEMO_ASSIGN_OR_RETURN(b.xc, aligned_buffer<float>::make(n * DI));
    MNEMO_ASSIGN_OR_RETURN(b.xdbc, aligned_buffer<float>::make(n * s.xdbc_width()));
    MNEMO_ASSIGN_OR_RETURN(b.dt, aligned_buffer<float>::make(n * DI));
    MNEMO_ASSIGN_OR_RETURN(b.y, aligned_buffer<float>::make(n * DI));
    return b;
  }
};

/// out = mixer(h) for the n tokens of applied micro-batch u, updating model layer
/// `layer`'s state of every sequence in it. h, out: [n, n_embd]; out may not alias h.
/// Sequences (and, when there are fewer sequences than threads, slices of 64 channels)
/// run in parallel: their states are disjoint.
template <simd::isa_tag Isa, recurrent_state_memory Memory>
status mamba_mixer_forward(const mamba_mixer& w, const ssm_hparams& s, float rms_eps, Memory& mem,
                           std::size_t layer, std::size_t u, std::size_t n, const float* h,
                           float* out, mamba_mixer_buffers& b, int n_threads,
                           matmul_workspace& mm) {
  const std::size_t E = w.in.n_in, DI = s.d_inner, S = s.d_state, R = s.dt_rank, K = s.d_conv;
  const std::size_t XW = s.xdbc_width();
  const auto groups = mem.groups(u);
  std::size_t covered = 0;
  for (const auto& g : groups) covered += g.n;
  if (covered != n)
    return make_status(status_code::internal,
                       "mamba mixer: micro-batch %zu has %zu tokens but its sequence groups "
                       "cover %zu",
                       u, n, covered);
  float *xz = b.xz.data(), *xc = b.xc.data(), *xdbc = b.xdbc.data(), *dt = b.dt.data(),
        *y = b.y.data();

  // Items of work: (group, channel slice). Slices are multiples of 64 channels so every
  // ISA's vector blocks stay whole.
  const int threads = n_threads > 0 ? n_threads : default_thread_count();
  const std::size_t per_group =
      groups.size() >= static_cast<std::size_t>(threads)
          ? 1
          : std::min<std::size_t>((threads + groups.size() - 1) / groups.size(), (DI + 63) / 64);
  const std::size_t slice = (DI / per_group + 63) / 64 * 64;
  const std::size_t n_slices = (DI + slice - 1) / slice;
  std::vector<memory::recurrent_layer_state> states(groups.size());
  for (std::size_t k = 0; k < groups.size(); ++k) states[k] = mem.layer_state(layer, u, k);
  // Token snapshots (memory::recurrent_config::n_token_snapshots): where the state after
  // token t of group k goes, [group][token], null when it is not kept.
  std::vector<std::vector<memory::recurrent_layer_state>> snaps(groups.size());
  if constexpr (requires { mem.token_snapshot(layer, u, std::size_t{0}, std::size_t{0}); })
    for (std::size_t k = 0; k < groups.size(); ++k) {
      bool any = false;
      for (std::size_t t = 0; t < groups[k].n; ++t) {
        snaps[k].push_back(mem.token_snapshot(layer, u, k, t));
        any = any || snaps[k].back().ssm != nullptr;
      }
      if (!any) snaps[k].clear();
    }

  mul_mat<Isa>(w.in, h, E, n, xz, 2 * DI, n_threads, mm);
  parallel_for(groups.size() * n_slices, n_threads, [&](std::size_t item, int) {
    const std::size_t k = item / n_slices, c0 = item % n_slices * slice;
    const std::size_t nc = std::min(slice, DI - c0), f = groups[k].first;
    ssm::conv_args c;
    c.d_inner = nc;
    c.d_conv = K;
    c.n_tokens = groups[k].n;
    c.x = xz + f * 2 * DI + c0;
    c.ld_x = 2 * DI;
    c.w = w.conv_w.data() + c0 * K;
    c.bias = w.conv_b.data() + c0;
    c.state = states[k].conv + c0 * (K - 1);
    c.out = xc + f * DI + c0;
    c.ld_out = DI;
    // A conv state is the last K - 1 inputs: the state after token t is read off the
    // window (old state ++ x rows) before the kernel overwrites the old state.
    for (std::size_t t = 0; t < snaps[k].size(); ++t) {
      if (snaps[k][t].conv == nullptr) continue;
      for (std::size_t ch = 0; ch < nc; ++ch)
        for (std::size_t j = 0; j + 1 < K; ++j) {
          const std::size_t i = t + 1 + j;  // window index
          snaps[k][t].conv[(c0 + ch) * (K - 1) + j] =
              i < K - 1 ? c.state[ch * (K - 1) + i] : c.x[(i - (K - 1)) * c.ld_x + ch];
        }
    }
    (void)ssm::causal_conv1d<Isa>(c);  // arguments are consistent by construction
  });

  mul_mat<Isa>(w.x_proj, xc, DI, n, xdbc, XW, n_threads, mm);
  if (!w.dt_norm.empty())
    for (std::size_t t = 0; t < n; ++t) {
      float* row = xdbc + t * XW;
      rms_norm<Isa>(row, w.dt_norm.data(), row, R, rms_eps);
      rms_norm<Isa>(row + R, w.b_norm.data(), row + R, S, rms_eps);
      rms_norm<Isa>(row + R + S, w.c_norm.data(), row + R + S, S, rms_eps);
    }
  mul_mat<Isa>(w.dt, xdbc, XW, n, dt, DI, n_threads, mm);
  for (std::size_t t = 0; t < n; ++t) add_to<Isa>(dt + t * DI, w.dt_b.data(), DI);

  parallel_for(groups.size() * n_slices, n_threads, [&](std::size_t item, int) {
    const std::size_t k = item / n_slices, c0 = item % n_slices * slice;
    const std::size_t nc = std::min(slice, DI - c0), f = groups[k].first;
    ssm::scan_args a;
    a.d_inner = nc;
    a.d_state = S;
    a.n_tokens = groups[k].n;
    a.x = xc + f * DI + c0;
    a.ld_x = DI;
    a.dt = dt + f * DI + c0;
    a.ld_dt = DI;
    a.B = xdbc + f * XW + R;
    a.C = xdbc + f * XW + R + S;
    a.ld_bc = XW;
    a.z = xz + f * 2 * DI + DI + c0;
    a.ld_z = 2 * DI;
    a.A = w.A.data() + c0 * S;
    a.D = w.D.data() + c0;
    a.state = states[k].ssm + c0 * S;
    a.y = y + f * DI + c0;
    a.ld_y = DI;
    if (snaps[k].empty()) {
      (void)ssm::selective_scan<Isa>(a);
      return;
    }
    // One token at a time on the loop order one call over all of them would take,
    // copying the state after each kept token: the same floats as that call.
    const std::size_t n_tok = a.n_tokens;
    const ssm::scan_path path = n_tok == 1 ? ssm::scan_path::step : ssm::scan_path::chunk;
    for (std::size_t t = 0; t < n_tok; ++t) {
      ssm::scan_args one = a;
      one.n_tokens = 1;
      one.x += t * a.ld_x;
      one.dt += t * a.ld_dt;
      one.B += t * a.ld_bc;
      one.C += t * a.ld_bc;
      one.z += t * a.ld_z;
      one.y += t * a.ld_y;
      (void)ssm::selective_scan<Isa>(one, path);
      if (snaps[k][t].ssm != nullptr)
        std::memcpy(snaps[k][t].ssm + c0 * S, a.state, nc * S * sizeof(float));
    }
  });
  mul_mat<Isa>(w.out, y, DI, n, out, E, n_threads, mm);
  return {};
}

}  // namespace mnemo::model
