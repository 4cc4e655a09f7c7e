// The two ends every decoder shares: the embedding lookup of a micro-batch, and the
// output head (final RMSNorm of the rows that asked for logits, then the vocabulary
// product with `output.weight`, or token_embd when the file ties them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/batch/ubatch.hpp"
#include "mnemo/model/layers.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/tensor_binder.hpp"
#include "mnemo/model/weight.hpp"

namespace mnemo::model {

/// x[t] [n_embd] = token_embd row of token t times `token_scale` (exactly the row
/// when 1), or the batch's embedding row unscaled. `who` names the model in errors.
template <simd::isa_tag Isa>
status embed_tokens(const ubatch& ub, const weight& token_embd, std::size_t n_embd,
                    std::uint32_t n_vocab, float* x, const char* who, float token_scale = 1.0f) {
  for (std::uint32_t t = 0; t < ub.n_tokens(); ++t) {
    float* row = x + t * n_embd;
    if (ub.source->has_embeddings()) {
      const auto in = ub.embd(t);
      if (in.size() != n_embd)
        return make_status(status_code::invalid_argument,
                           "%s: embedding row of %zu values, the model has n_embd %zu", who,
                           in.size(), n_embd);
      std::memcpy(row, in.data(), n_embd * sizeof(float));
      continue;
    }
    const token_id id = ub.token(t);
    if (id < 0 || static_cast<std::uint32_t>(id) >= n_vocab)
      return make_status(status_code::out_of_range, "%s: token %d is outside [0, %u)", who, id,
                         n_vocab);
    get_row<Isa>(token_embd, static_cast<std::size_t>(id), row);
    if (token_scale != 1.0f)
      for (std::size_t i = 0; i < n_embd; ++i) row[i] *= token_scale;
  }
  return {};
}

/// token_embd, the final norm and the output matrix of a decoder.
struct output_head {
  weight token_embd;        // [n_embd, n_vocab]  (ggml ne)
  weight output;            // [n_embd, n_vocab]; token_embd when tied
  std::vector<float> norm;  // [n_embd]
  bool tied = false;        // no output.weight (TENSOR_DUPLICATED in llama.cpp)

  status bind(const tensor_binder& b, std::size_t n_embd, std::size_t n_vocab) {
    MNEMO_ASSIGN_OR_RETURN(token_embd, b.rows("token_embd.weight", n_embd, n_vocab));
    MNEMO_ASSIGN_OR_RETURN(norm, b.norm("output_norm.weight", n_embd));
    tied = !b.has("output.weight");
    if (tied) {
      output = token_embd;
      b.attach_tiles(output);
    } else {
      MNEMO_ASSIGN_OR_RETURN(output, b.matrix("output.weight", n_embd, n_vocab));
    }
    return {};
  }

  /// logits [n_out, n_vocab] of the rows of x [ub.n_tokens(), n_embd] with ub.output
  /// set, in micro-batch order; h [>= n_out, n_embd] is scratch. Returns n_out.
  template <simd::isa_tag Isa>
  std::size_t apply(const ubatch& ub, const float* x, float* h, std::size_t n_embd, float rms_eps,
                    float* logits, std::size_t n_vocab, int n_threads,
                    matmul_workspace& mm_ws) const {
    std::size_t n_out = 0;
    for (std::size_t t = 0; t < ub.n_tokens(); ++t)
      if (ub.output[t])
        rms_norm<Isa>(x + t * n_embd, norm.data(), h + n_out++ * n_embd, n_embd, rms_eps);
    mul_mat<Isa>(output, h, n_embd, n_out, logits, n_vocab, n_threads, mm_ws);
    return n_out;
  }
};

}  // namespace mnemo::model
