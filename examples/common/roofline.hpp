// The roofline of a decode call of an attention decoder: the bytes it must read and the
// FLOPs it must do, and the time a machine of a given read bandwidth and FMA peak needs
// for them at least. batched_bench divides that time by the measured one.
//
// Per micro-batch (the context cuts a batch into micro-batches of at most n_ubatch
// tokens; this counts consecutive runs of n_ubatch tokens):
//   bytes = every blk.* tensor once, at its stored type
//         + the output matrix once when a token of the micro-batch wants logits
//         + one embedding row per token
//         + per layer, per sequence: the K and V of the cells its last token sees
//           (window layers: those of the window), once per KV head, at the cache's type
//   FLOPs = 2 x the blk.* matrices' weights x tokens
//         + 2 x the output matrix's weights x tokens that want logits
//         + per layer, per token: 2 x n_head x (d_k + d_v) x the cells it sees
// and its time is max(bytes / read bandwidth, FLOPs / FMA peak); a phase's roofline is
// the sum over its micro-batches. Norms, RoPE and softmax are not counted: they neither
// read much nor multiply much.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mnemo/base/result.hpp"
#include "mnemo/batch/batch.hpp"
#include "mnemo/dtype/element_type.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/model/decoder_hparams.hpp"

namespace mnemo_examples {

/// What one layer's attention reads per cell and computes per (token, cell).
struct roofline_layer {
  std::uint32_t n_head = 0, n_head_kv = 0, d_k = 0, d_v = 0;
  std::uint32_t window = 0;  // a token at p sees the cells (p - window, p]; 0: all before it
};

/// The sizes of a model that its roofline depends on.
struct roofline_model {
  double layer_bytes = 0;     // every blk.* tensor at its stored type
  double layer_weights = 0;   // weights of the blk.* matrices (2-D tensors)
  double head_bytes = 0;      // the output matrix (token_embd when tied)
  double head_weights = 0;    //   and its weights
  double embd_row_bytes = 0;  // one token's row of token_embd
  double k_row_bytes = 0;     // one KV head's keys of one cell at the cache's type (d_k values)
  double v_row_bytes = 0;     //   and its values (d_v values)
  std::vector<roofline_layer> layers;
};

/// Bytes read and FLOPs done, added up over micro-batches.
struct roofline_cost {
  double bytes = 0, flops = 0;
  double seconds = 0;  // sum over micro-batches of max(bytes / read, FLOPs / FMA)
};

/// The roofline_model of an attention decoder's file, its hyper-parameters, and K/V
/// stored as kv. An invalid_argument status when the file lacks token_embd or kv cannot
/// hold a row of d_k / d_v values.
inline mnemo::result<roofline_model> roofline_model_of(const mnemo::gguf::file& f,
                                                       const mnemo::model::decoder_hparams& hp,
                                                       mnemo::dtype::element_type kv) {
  roofline_model m;
  const mnemo::gguf::tensor* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr)
    return mnemo::make_status(mnemo::status_code::invalid_argument,
                              "roofline: the file has no token_embd.weight");
  const mnemo::gguf::tensor* head = f.find_tensor("output.weight");
  if (head == nullptr) head = embd;
  for (const mnemo::gguf::tensor& t : f.tensors()) {
    if (!t.name.starts_with("blk.")) continue;
    m.layer_bytes += static_cast<double>(t.n_bytes());
    if (t.n_dims == 2) m.layer_weights += static_cast<double>(t.n_elements);
  }
  m.head_bytes = static_cast<double>(head->n_bytes());
  m.head_weights = static_cast<double>(head->n_elements);
  m.embd_row_bytes = static_cast<double>(embd->row_bytes);
  MNEMO_ASSIGN_OR_RETURN(const std::size_t k_row, mnemo::dtype::row_bytes(kv, hp.d_k));
  MNEMO_ASSIGN_OR_RETURN(const std::size_t v_row, mnemo::dtype::row_bytes(kv, hp.d_v));
  m.k_row_bytes = static_cast<double>(k_row);
  m.v_row_bytes = static_cast<double>(v_row);
  for (std::size_t l = 0; l < hp.n_layer; ++l)
    m.layers.push_back({hp.n_head, hp.n_head_kv, hp.d_k, hp.d_v, hp.local(l) ? hp.n_swa : 0});
  return m;
}

/// One sequence's tokens in a micro-batch: positions first .. last, `outputs` of them
/// wanting logits; the cells of positions < first are already in the memory.
struct sequence_run {
  mnemo::seq_id seq = 0;
  mnemo::pos_t first = 0, last = 0;
  std::uint32_t n_tokens = 0, outputs = 0;
};

/// Cells a token at position p sees in a layer of the given window.
inline double cells_seen(mnemo::pos_t p, std::uint32_t window) noexcept {
  const double all = static_cast<double>(p) + 1;
  return window == 0 ? all : std::min(all, static_cast<double>(window));
}

/// The bytes and FLOPs of one micro-batch made of `runs` (one per sequence).
inline roofline_cost micro_batch_cost(const roofline_model& m, std::span<const sequence_run> runs) {
  roofline_cost c;
  double tokens = 0, outputs = 0;
  for (const sequence_run& r : runs) {
    tokens += r.n_tokens;
    outputs += r.outputs;
    for (const roofline_layer& L : m.layers) {
      // The union of the cells its tokens see: up to the last, from the first's window on.
      const double read_cells = L.window == 0
                                    ? static_cast<double>(r.last) + 1
                                    : std::min(static_cast<double>(r.last) + 1,
                                               static_cast<double>(L.window) + (r.last - r.first));
      c.bytes += read_cells * L.n_head_kv * (m.k_row_bytes + m.v_row_bytes);
      double seen = 0;  // cells seen, summed over the run's tokens
      for (mnemo::pos_t p = r.first; p <= r.last; ++p) seen += cells_seen(p, L.window);
      c.flops += 2.0 * L.n_head * (L.d_k + L.d_v) * seen;
    }
  }
  c.bytes += m.layer_bytes + tokens * m.embd_row_bytes + (outputs > 0 ? m.head_bytes : 0.0);
  c.flops += 2.0 * m.layer_weights * tokens + 2.0 * m.head_weights * outputs;
  return c;
}

/// The lower bound on the time of `c` on a machine that reads read_gbps GB/s and does
/// fma_gflops GFLOP/s; 0 for a limit that is 0 (not measured).
inline double roofline_seconds(const roofline_cost& c, double read_gbps, double fma_gflops) {
  const double read = read_gbps > 0 ? c.bytes / (read_gbps * 1e9) : 0.0;
  const double fma = fma_gflops > 0 ? c.flops / (fma_gflops * 1e9) : 0.0;
  return std::max(read, fma);
}

/// The cost of decoding b, cut into micro-batches of n_ubatch consecutive tokens, each
/// split by primary sequence; tokens of one sequence are taken to be at consecutive
/// positions within a micro-batch, as batched_bench adds them.
inline roofline_cost batch_cost(const roofline_model& m, const mnemo::batch& b,
                                std::uint32_t n_ubatch, double read_gbps, double fma_gflops) {
  roofline_cost total;
  std::vector<sequence_run> runs;
  const auto pos = b.positions();
  const auto out = b.outputs();
  for (std::uint32_t u0 = 0; u0 < b.size(); u0 += n_ubatch) {
    runs.clear();
    const std::uint32_t u1 = std::min(b.size(), u0 + n_ubatch);
    for (std::uint32_t i = u0; i < u1; ++i) {
      const mnemo::seq_id s = b.primary(i);
      auto it =
          std::find_if(runs.begin(), runs.end(), [s](const sequence_run& r) { return r.seq == s; });
      if (it == runs.end()) it = runs.insert(runs.end(), {s, pos[i], pos[i], 0, 0});
      it->first = std::min(it->first, pos[i]);
      it->last = std::max(it->last, pos[i]);
      it->n_tokens += 1;
      it->outputs += out[i] == mnemo::output_flag::yes ? 1 : 0;
    }
    const roofline_cost c = micro_batch_cost(m, runs);
    total.bytes += c.bytes;
    total.flops += c.flops;
    total.seconds += roofline_seconds(c, read_gbps, fma_gflops);
  }
  return total;
}

}  // namespace mnemo_examples
