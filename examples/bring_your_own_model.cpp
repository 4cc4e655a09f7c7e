// bring_your_own_model: a host's own decoder on mnemo's memory and attention, without
// mnemo's models. `own_llama` below is a small llama-style decoder written from scratch:
// it reads its f32 weights from the GGUF through mnemo::gguf, runs its own RMSNorm,
// RoPE, projections and SwiGLU FFN, and hands mnemo only what a KV cache is for: each
// layer's K/V rows (write_kv) and the attention over what the memory holds (views +
// attention::attend). Meeting the context's model concept (n_vocab, n_embd,
// make_workspace, forward<Isa>, workspace::logits) gives it mnemo::context: batches of
// many sequences, micro-batching, seq_cp / seq_rm, the failure guarantee.
//
//   bring_your_own_model MODEL.gguf [--threads N]
//
// MODEL.gguf: a llama with f32 weights (the fixtures' llama-tiny). The example decodes
// two sequences (a prompt in chunks, a branch with seq_cp, both continued) through its
// own decoder and through mnemo's built-in llama (opened by mnemo::engine with the same
// full cache of f32 K/V), and compares every logit: the exit code is 1 when any differs
// by more than 1e-4 (the fixtures' tolerance for llama-tiny). docs/bring-your-own-model.md
// walks through it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/attention/attend.hpp"
#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/engine/engine.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/full/full_cache.hpp"

namespace {

using namespace mnemo;

/// A llama-style decoder with f32 weights: the host's model, not mnemo's.
class own_llama {
 public:
  /// Activations for micro-batches of up to n_ubatch tokens.
  struct workspace {
    std::vector<float> x, h, q, k, v, attn, gate, up, out;  // [n_ubatch, width]
    std::vector<float> logits_;                             // [n_outputs, n_vocab]
    attention::workspace attn_ws;                           // mnemo's attention scratch
    memory::layer_views views;                              // what the memory hands over
    const float* logits() const noexcept { return logits_.data(); }
  };

  static result<own_llama> load(const std::string& path) {
    own_llama m;
    MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(path));
    MNEMO_ASSIGN_OR_RETURN(std::string_view arch, f.get_string("general.architecture"));
    if (arch != "llama")
      return make_status(status_code::unsupported, "own_llama: architecture '%.*s', not llama",
                         static_cast<int>(arch.size()), arch.data());
    MNEMO_ASSIGN_OR_RETURN(m.n_embd_, f.get_u32("llama.embedding_length"));
    MNEMO_ASSIGN_OR_RETURN(m.n_layer_, f.get_u32("llama.block_count"));
    MNEMO_ASSIGN_OR_RETURN(m.n_ff_, f.get_u32("llama.feed_forward_length"));
    MNEMO_ASSIGN_OR_RETURN(m.n_head_, f.get_u32("llama.attention.head_count"));
    MNEMO_ASSIGN_OR_RETURN(m.n_head_kv_, f.get_u32("llama.attention.head_count_kv"));
    MNEMO_ASSIGN_OR_RETURN(m.eps_, f.get_f32("llama.attention.layer_norm_rms_epsilon"));
    m.d_ = m.n_embd_ / m.n_head_;
    m.n_rot_ = f.get_u32("llama.rope.dimension_count").value_or(m.d_);
    m.freq_base_ = f.get_f32("llama.rope.freq_base").value_or(10000.0f);
    const std::size_t E = m.n_embd_, kd = m.n_head_kv_ * m.d_, F = m.n_ff_;
    MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* embd, f.require_tensor("token_embd.weight"));
    m.n_vocab_ = static_cast<std::uint32_t>(embd->dims[1]);
    const std::size_t V = m.n_vocab_;
    MNEMO_ASSIGN_OR_RETURN(m.token_embd_, read(f, "token_embd.weight", V * E));
    MNEMO_ASSIGN_OR_RETURN(m.output_norm_, read(f, "output_norm.weight", E));
    MNEMO_ASSIGN_OR_RETURN(m.output_, read(f, "output.weight", V * E));
    m.layers_.resize(m.n_layer_);
    for (std::uint32_t l = 0; l < m.n_layer_; ++l) {
      layer& L = m.layers_[l];
      const std::string p = "blk." + std::to_string(l) + ".";
      MNEMO_ASSIGN_OR_RETURN(L.attn_norm, read(f, p + "attn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.wq, read(f, p + "attn_q.weight", E * E));
      MNEMO_ASSIGN_OR_RETURN(L.wk, read(f, p + "attn_k.weight", kd * E));
      MNEMO_ASSIGN_OR_RETURN(L.wv, read(f, p + "attn_v.weight", kd * E));
      MNEMO_ASSIGN_OR_RETURN(L.wo, read(f, p + "attn_output.weight", E * E));
      MNEMO_ASSIGN_OR_RETURN(L.ffn_norm, read(f, p + "ffn_norm.weight", E));
      MNEMO_ASSIGN_OR_RETURN(L.gate, read(f, p + "ffn_gate.weight", F * E));
      MNEMO_ASSIGN_OR_RETURN(L.up, read(f, p + "ffn_up.weight", F * E));
      MNEMO_ASSIGN_OR_RETURN(L.down, read(f, p + "ffn_down.weight", E * F));
    }
    return m;
  }

  // ---- the model concept (mnemo::decoder_model) -----------------------------------

  std::uint32_t n_vocab() const noexcept { return n_vocab_; }
  std::uint32_t n_embd() const noexcept { return n_embd_; }

  result<workspace> make_workspace(std::uint32_t n_ubatch) const {
    workspace ws;
    const std::size_t n = n_ubatch, E = n_embd_, kd = n_head_kv_ * d_;
    ws.x.resize(n * E);
    ws.h.resize(n * E);
    ws.q.resize(n * E);
    ws.attn.resize(n * E);
    ws.out.resize(n * E);
    ws.k.resize(n * kd);
    ws.v.resize(n * kd);
    ws.gate.resize(n * n_ff_);
    ws.up.resize(n * n_ff_);
    ws.logits_.resize(n * n_vocab_);
    return ws;
  }

  /// Micro-batch u, already applied to `mem`: each layer's K/V goes into the memory,
  /// and the attention reads back what the memory holds for these tokens (their own
  /// sequence's earlier tokens included). Logits of the output tokens, in order.
  template <simd::isa_tag Isa = simd::native, memory::kv_memory Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, workspace& ws, int n_threads) const {
    const std::size_t n = ub.n_tokens(), E = n_embd_, kd = n_head_kv_ * d_;
    for (std::size_t t = 0; t < n; ++t) {
      const token_id id = ub.token(static_cast<std::uint32_t>(t));
      if (id < 0 || static_cast<std::uint32_t>(id) >= n_vocab_)
        return make_status(status_code::out_of_range, "own_llama: token %d outside [0, %u)", id,
                           n_vocab_);
      std::memcpy(&ws.x[t * E], &token_embd_[static_cast<std::size_t>(id) * E], E * sizeof(float));
    }
    const attention::shape sh{n_head_, n_head_kv_, d_, d_};
    attention::params ap;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(d_));
    for (std::size_t l = 0; l < n_layer_; ++l) {
      const layer& L = layers_[l];
      for (std::size_t t = 0; t < n; ++t) {
        rms_norm(&ws.x[t * E], L.attn_norm, &ws.h[t * E]);
        matvec(L.wq, &ws.h[t * E], E, E, &ws.q[t * E]);
        matvec(L.wk, &ws.h[t * E], E, kd, &ws.k[t * kd]);
        matvec(L.wv, &ws.h[t * E], E, kd, &ws.v[t * kd]);
        for (std::size_t hd = 0; hd < n_head_; ++hd) rope(&ws.q[t * E + hd * d_], ub.pos[t]);
        for (std::size_t hd = 0; hd < n_head_kv_; ++hd) rope(&ws.k[t * kd + hd * d_], ub.pos[t]);
        // [n_head_kv, d] rows of token t into the memory's cell for it.
        mem.template write_kv<Isa>(l, u, t, &ws.k[t * kd], &ws.v[t * kd]);
      }
      // The cells these tokens see (causal, per sequence), as contiguous segments.
      mem.views(l, u, ws.views);
      const attention::query_batch qb{
          ws.q.data(), n, ub.pos.data(), ub.seq.data(),
          ws.views.token_stream.empty() ? nullptr : ws.views.token_stream.data()};
      MNEMO_RETURN_IF_ERROR(
          (attention::attend<Isa, typename Memory::k_element, typename Memory::v_element>(
              sh, ap, qb, ws.views.streams, ws.attn.data(), ws.attn_ws, {n_threads})));
      for (std::size_t t = 0; t < n; ++t) {
        float* x = &ws.x[t * E];
        matvec(L.wo, &ws.attn[t * E], E, E, &ws.out[t * E]);
        for (std::size_t i = 0; i < E; ++i) x[i] += ws.out[t * E + i];
        // x += down(silu(gate h) * up h), h = norm(x)
        rms_norm(x, L.ffn_norm, &ws.h[t * E]);
        float* g = &ws.gate[t * n_ff_];
        float* up = &ws.up[t * n_ff_];
        matvec(L.gate, &ws.h[t * E], E, n_ff_, g);
        matvec(L.up, &ws.h[t * E], E, n_ff_, up);
        for (std::size_t i = 0; i < n_ff_; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * up[i];
        matvec(L.down, g, n_ff_, E, &ws.out[t * E]);
        for (std::size_t i = 0; i < E; ++i) x[i] += ws.out[t * E + i];
      }
    }
    std::size_t row = 0;
    for (std::size_t t = 0; t < n; ++t) {
      if (!ub.output[t]) continue;
      rms_norm(&ws.x[t * E], output_norm_, &ws.h[t * E]);
      matvec(output_, &ws.h[t * E], E, n_vocab_, &ws.logits_[row++ * n_vocab_]);
    }
    return {};
  }

  /// A full cache shaped for this model's K/V (RoPE as applied, for K-shifts).
  memory::full_cache_config cache_config(std::size_t n_cells, seq_id n_seq_max) const {
    memory::full_cache_config c;
    c.shape = {n_layer_, n_head_kv_, d_, d_};
    c.size = n_cells;
    c.n_seq_max = n_seq_max;
    c.rope.layout = attention::rope_layout::normal;
    c.rope.n_rot = n_rot_;
    c.rope.freq_base = freq_base_;
    return c;
  }

 private:
  struct layer {
    std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down;
  };

  /// An f32 tensor of n values, copied out of the file: the model owns its weights.
  static result<std::vector<float>> read(const gguf::file& f, const std::string& name,
                                         std::size_t n) {
    MNEMO_ASSIGN_OR_RETURN(const gguf::tensor* t, f.require_tensor(name));
    if (t->type_name != "f32" || t->n_elements != n)
      return make_status(status_code::unsupported,
                         "own_llama: %s is %.*s with %llu values, expected f32 with %zu",
                         name.c_str(), static_cast<int>(t->type_name.size()), t->type_name.data(),
                         static_cast<unsigned long long>(t->n_elements), n);
    std::vector<float> w(n);
    std::memcpy(w.data(), f.bytes().data() + t->file_offset, n * sizeof(float));
    return w;
  }

  /// y[o] = W[o, :] . x for W of ggml shape [n_in, n_out] (PyTorch (n_out, n_in)).
  static void matvec(const std::vector<float>& w, const float* x, std::size_t n_in,
                     std::size_t n_out, float* y) {
    for (std::size_t o = 0; o < n_out; ++o) {
      const float* row = &w[o * n_in];
      float s = 0.0f;
      for (std::size_t i = 0; i < n_in; ++i) s += row[i] * x[i];
      y[o] = s;
    }
  }

  /// y = x / sqrt(mean(x^2) + eps) * w
  void rms_norm(const float* x, const std::vector<float>& w, float* y) const {
    double ss = 0.0;
    for (std::size_t i = 0; i < n_embd_; ++i) ss += double(x[i]) * x[i];
    const float r = 1.0f / std::sqrt(static_cast<float>(ss / n_embd_) + eps_);
    for (std::size_t i = 0; i < n_embd_; ++i) y[i] = x[i] * r * w[i];
  }

  /// RoPE, normal (adjacent-pair) mode: pair i turns by pos * base^(-2i / n_rot), the
  /// angle kept as ggml keeps it (a running float product).
  void rope(float* head, pos_t pos) const {
    const float step = std::pow(freq_base_, -2.0f / static_cast<float>(n_rot_));
    float theta = static_cast<float>(pos);
    for (std::size_t i = 0; i < n_rot_; i += 2, theta *= step) {
      const float c = std::cos(theta), s = std::sin(theta);
      const float a = head[i], b = head[i + 1];
      head[i] = a * c - b * s;
      head[i + 1] = a * s + b * c;
    }
  }

  std::size_t n_embd_ = 0, n_layer_ = 0, n_ff_ = 0, n_head_ = 0, n_head_kv_ = 0, d_ = 0;
  std::size_t n_rot_ = 0;
  std::uint32_t n_vocab_ = 0;
  float eps_ = 1e-5f, freq_base_ = 10000.0f;
  std::vector<float> token_embd_, output_norm_, output_;
  std::vector<layer> layers_;
};

static_assert(decoder_model<own_llama, memory::full_cache<float>>,
              "own_llama meets mnemo's model concept on a full cache");

/// Applies the same calls to both decoders and tracks the largest logit difference.
struct comparison {
  double worst = 0;
  std::size_t rows = 0;

  template <class A, class B>
  status decode(A& ours, B& builtin, const batch& b) {
    MNEMO_RETURN_IF_ERROR(ours.decode(b).with_context("own_llama"));
    MNEMO_RETURN_IF_ERROR(builtin.decode(b).with_context("built-in llama"));
    const auto x = ours.logits(), y = builtin.logits();
    if (x.size() != y.size())
      return make_status(status_code::internal, "%zu logits against %zu", x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double d = std::fabs(double(x[i]) - y[i]);
      if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
    }
    rows += ours.n_outputs();
    return {};
  }
};

status run(const std::string& path, int threads) {
  constexpr std::uint32_t n_ctx = 256, n_ubatch = 16;  // 16: prompts span micro-batches
  constexpr seq_id n_seq = 2;
  MNEMO_ASSIGN_OR_RETURN(own_llama m, own_llama::load(path));
  MNEMO_ASSIGN_OR_RETURN(auto cache, memory::full_cache<float>::make(m.cache_config(n_ctx, n_seq)));
  context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = n_seq;
  p.n_threads = threads;
  using own_context = context<own_llama, memory::full_cache<float>>;
  MNEMO_ASSIGN_OR_RETURN(own_context ours, own_context::make(m, std::move(cache), p));

  engine_options o;
  o.memory = memory_kind::full;
  o.kv = kv_type::f32;
  o.n_ctx = n_ctx;
  o.n_seq_max = n_seq;
  o.n_ubatch = n_ubatch;
  o.n_threads = o.n_threads_batch = threads;
  MNEMO_ASSIGN_OR_RETURN(engine builtin, engine::open(path, o));

  comparison cmp;
  batch b;
  splitmix64 rng{7};
  auto token = [&] { return static_cast<token_id>(3 + rng.next() % (m.n_vocab() - 3)); };
  // Sequence 0: a prompt of 40 tokens in two calls, logits for every token.
  for (pos_t p0 : {0, 24}) {
    b.clear();
    for (pos_t p = p0; p < (p0 == 0 ? 24 : 40); ++p) b.add(token(), p, {0}, true);
    MNEMO_RETURN_IF_ERROR(cmp.decode(ours, builtin, b));
  }
  // Sequence 1 branches off at 30 (seq_cp), then both continue in one batch.
  MNEMO_RETURN_IF_ERROR(ours.seq_cp(0, 1, 0, 30));
  MNEMO_RETURN_IF_ERROR(builtin.seq_cp(0, 1, 0, 30));
  for (int step = 0; step < 8; ++step) {
    b.clear();
    b.add(token(), 40 + step, {0}, true);
    b.add(token(), 30 + step, {1}, true);
    MNEMO_RETURN_IF_ERROR(cmp.decode(ours, builtin, b));
  }
  // Sequence 0 forgets its last 10 tokens and takes a different turn there.
  MNEMO_RETURN_IF_ERROR(ours.seq_rm(0, 38, -1));
  MNEMO_RETURN_IF_ERROR(builtin.seq_rm(0, 38, -1));
  b.clear();
  for (pos_t p = 38; p < 50; ++p) b.add(token(), p, {0}, true);
  MNEMO_RETURN_IF_ERROR(cmp.decode(ours, builtin, b));

  constexpr double tol = 1e-4;
  const bool ok = cmp.worst <= tol;
  std::printf(
      "own_llama vs mnemo's llama: %zu rows of %u logits, max |diff| %.3g (tolerance %g): "
      "%s\n",
      cmp.rows, m.n_vocab(), cmp.worst, tol, ok ? "PASS" : "FAIL");
  if (!ok) return make_status(status_code::internal, "the logits differ beyond the tolerance");
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1) {
        std::fprintf(stderr, "bring_your_own_model: --threads takes a count >= 1\n");
        return 2;
      }
    } else if (path.empty() && !a.starts_with("-")) {
      path = argv[i];
    } else {
      std::fprintf(stderr, "usage: bring_your_own_model MODEL.gguf [--threads N]\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: bring_your_own_model MODEL.gguf [--threads N]\n");
    return 2;
  }
  if (status st = run(path, threads); !st) {
    std::fprintf(stderr, "bring_your_own_model: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
