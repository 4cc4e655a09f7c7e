// Speculative decoding with rollback: a cheap draft rule proposes k tokens, the model
// verifies them in one batch (one micro-batch), the longest agreeing prefix is kept and
// the rest is removed with seq_rm. On a recurrent model (mamba, or jamba's Mamba layers)
// the removal restores a token snapshot of that micro-batch
// (memory::recurrent_config::n_token_snapshots, docs/recurrent.md).
//
// The draft rule is prompt lookup: find the latest earlier occurrence of the last token
// and propose what followed it (else repeat the last token). Greedy decoding of a
// random-weight model loops, so drafts are often right and often wrong.
//
// The example also decodes plainly, one token per call, and checks that both give the
// same token ids and the same logits for every generated token (within 1e-4 * max|logit|:
// a verification batch multiplies several rows at once); exit 0 and "self-check: PASS"
// when they agree, 1 on a mismatch or library error, 2 on bad arguments.
//
//   speculative model.gguf [--draft K] [-n N] [--threads T]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/context.hpp"
#include "mnemo/gguf/file.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/llama.hpp"
#include "mnemo/model/mamba.hpp"
#include "mnemo/sampling.hpp"

namespace {

using namespace mnemo;

struct options {
  std::string path;
  int draft = 4;
  int n_gen = 32;
  int threads = 1;
};

/// Each generated token and the logits row it was chosen from.
struct generation {
  std::vector<token_id> tokens;
  std::vector<std::vector<float>> rows;
  int calls = 0, drafted = 0, accepted = 0;
};

const std::vector<token_id> k_prompt = {1, 17, 42, 7, 99, 3, 17, 42};

/// Up to k tokens that followed the latest earlier occurrence of the last token.
std::vector<token_id> draft_tokens(const std::vector<token_id>& h, int k) {
  const token_id last = h.back();
  for (std::size_t i = h.size() - 1; i-- > 0;)
    if (h[i] == last) {
      std::vector<token_id> d(h.begin() + static_cast<std::ptrdiff_t>(i) + 1, h.end());
      d.resize(std::min<std::size_t>(d.size(), static_cast<std::size_t>(k)));
      while (d.size() < static_cast<std::size_t>(k)) d.push_back(d.empty() ? last : d.back());
      return d;
    }
  return std::vector<token_id>(static_cast<std::size_t>(k), last);
}

template <class Ctx>
status decode_prompt(Ctx& c) {
  batch b;
  for (std::size_t i = 0; i < k_prompt.size(); ++i)
    b.add(k_prompt[i], static_cast<pos_t>(i), {0}, i + 1 == k_prompt.size());
  return c.decode(b);
}

template <class Ctx>
result<generation> plain(Ctx& c, int n_gen) {
  generation g;
  MNEMO_RETURN_IF_ERROR(decode_prompt(c));
  auto pos = static_cast<pos_t>(k_prompt.size());
  for (int i = 0; i < n_gen; ++i) {
    const auto row = c.logits_ith(-1);
    g.rows.emplace_back(row.begin(), row.end());
    g.tokens.push_back(sample_greedy(row));
    batch b;
    b.add(g.tokens.back(), pos++, {0}, true);
    MNEMO_RETURN_IF_ERROR(c.decode(b));
    ++g.calls;
  }
  return g;
}

template <class Ctx>
result<generation> speculative(Ctx& c, int n_gen, int k) {
  generation g;
  MNEMO_RETURN_IF_ERROR(decode_prompt(c));
  std::vector<token_id> history = k_prompt;
  {
    const auto row = c.logits_ith(-1);
    g.rows.emplace_back(row.begin(), row.end());
    g.tokens.push_back(sample_greedy(row));
  }
  // Invariant: the memory holds `history`; g.tokens.back() is chosen but not decoded.
  while (static_cast<int>(g.tokens.size()) < n_gen) {
    const pos_t p = static_cast<pos_t>(history.size());
    history.push_back(g.tokens.back());
    const std::vector<token_id> d = draft_tokens(history, k);
    batch b;
    b.add(history.back(), p, {0}, true);
    for (std::size_t i = 0; i < d.size(); ++i)
      b.add(d[i], p + 1 + static_cast<pos_t>(i), {0}, true);
    MNEMO_RETURN_IF_ERROR(c.decode(b));
    ++g.calls;
    g.drafted += k;
    // Row i predicts the token after batch token i: keep drafts while they agree.
    std::size_t m = 0;
    for (;; ++m) {
      const auto row = c.output_row(static_cast<std::uint32_t>(m));
      const token_id t = sample_greedy(row);
      g.rows.emplace_back(row.begin(), row.end());
      g.tokens.push_back(t);
      if (m == d.size() || t != d[m] || static_cast<int>(g.tokens.size()) >= n_gen) break;
      history.push_back(t);
    }
    g.accepted += static_cast<int>(m);
    // The memory holds p .. p + k; keep p .. p + m (what history holds now).
    MNEMO_RETURN_IF_ERROR(c.seq_rm(0, static_cast<pos_t>(history.size()), -1));
  }
  g.tokens.resize(static_cast<std::size_t>(n_gen));
  g.rows.resize(static_cast<std::size_t>(n_gen));
  return g;
}

template <class Model, class Memory, class MakeMemory>
int run(const Model& m, MakeMemory make_memory, const options& o) {
  context_params p;
  p.n_ubatch = 512;
  p.n_threads = o.threads;
  auto make_ctx = [&](bool snapshots) -> result<context<Model, Memory>> {
    MNEMO_ASSIGN_OR_RETURN(Memory mem, make_memory(snapshots ? o.draft : 0));
    return context<Model, Memory>::make(m, std::move(mem), p);
  };
  auto a = make_ctx(false);
  auto b = make_ctx(true);
  if (!a.is_ok() || !b.is_ok()) {
    std::fprintf(stderr, "speculative: %s\n",
                 (a.is_ok() ? b.error() : a.error()).to_string().c_str());
    return 1;
  }
  const auto ref = plain(*a, o.n_gen);
  const auto spec = speculative(*b, o.n_gen, o.draft);
  if (!ref.is_ok() || !spec.is_ok()) {
    std::fprintf(stderr, "speculative: %s\n",
                 (ref.is_ok() ? spec.error() : ref.error()).to_string().c_str());
    return 1;
  }
  std::printf("tokens:");
  for (token_id t : spec->tokens) std::printf(" %d", t);
  std::printf("\nplain: %d calls; speculative: %d calls, %d of %d drafted tokens accepted\n",
              ref->calls, spec->calls, spec->accepted, spec->drafted);
  float worst = 0;
  bool same = ref->tokens == spec->tokens;
  for (std::size_t i = 0; same && i < ref->rows.size(); ++i) {
    float top = 1;
    for (float v : ref->rows[i]) top = std::max(top, std::fabs(v));
    for (std::size_t j = 0; j < ref->rows[i].size(); ++j) {
      const float d = std::fabs(ref->rows[i][j] - spec->rows[i][j]) / top;
      worst = std::max(worst, d);
    }
  }
  same = same && worst <= 1e-4f;
  std::printf("largest logit difference / max|logit|: %.2e\n", static_cast<double>(worst));
  std::printf("self-check: speculative == greedy: %s\n", same ? "PASS" : "FAIL");
  return same ? 0 : 1;
}

int usage() {
  std::fprintf(stderr, "usage: speculative model.gguf [--draft K] [-n N] [--threads T]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](int& out) {
      if (i + 1 >= argc) return false;
      out = std::atoi(argv[++i]);
      return out > 0;
    };
    if (a == "--draft") {
      if (!value(o.draft)) return usage();
    } else if (a == "-n") {
      if (!value(o.n_gen)) return usage();
    } else if (a == "--threads") {
      if (!value(o.threads)) return usage();
    } else if (o.path.empty() && !a.starts_with("-")) {
      o.path = a;
    } else {
      return usage();
    }
  }
  if (o.path.empty()) return usage();

  auto file = gguf::file::open(o.path);
  if (!file.is_ok()) {
    std::fprintf(stderr, "speculative: %s\n", file.error().to_string().c_str());
    return 1;
  }
  const auto arch = file->get_string("general.architecture");
  const std::string name = arch.is_ok() ? std::string(*arch) : "";
  const std::size_t n_ctx = k_prompt.size() + static_cast<std::size_t>(o.n_gen + o.draft) + 1;
  auto fail = [](const status& st) {
    std::fprintf(stderr, "speculative: %s\n", st.to_string().c_str());
    return 1;
  };
  if (name == "mamba") {
    auto m = model::mamba_model::load(std::move(file).value());
    if (!m.is_ok()) return fail(m.error());
    return run<model::mamba_model, memory::recurrent>(
        *m,
        [&](int snaps) {
          memory::recurrent_config c = m->recurrent_config(1);
          c.n_token_snapshots = static_cast<std::size_t>(snaps);
          return memory::recurrent::make(c);
        },
        o);
  }
  if (name == "jamba") {
    using mem_t = memory::layered<memory::full_cache<float>, memory::recurrent>;
    auto m = model::jamba_model::load(std::move(file).value());
    if (!m.is_ok()) return fail(m.error());
    return run<model::jamba_model, mem_t>(
        *m,
        [&](int snaps) -> result<mem_t> {
          MNEMO_ASSIGN_OR_RETURN(auto kv,
                                 memory::full_cache<float>::make(m->full_cache_config(n_ctx, 1)));
          memory::recurrent_config c = m->recurrent_config(1);
          c.n_token_snapshots = static_cast<std::size_t>(snaps);
          MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(c));
          return mem_t::make(m->layer_parts(0, 1), std::move(kv), std::move(rec));
        },
        o);
  }
  if (name == "llama") {
    auto m = model::llama_model::load(std::move(file).value());
    if (!m.is_ok()) return fail(m.error());
    return run<model::llama_model, memory::full_cache<float>>(
        *m, [&](int) { return memory::full_cache<float>::make(m->full_cache_config(n_ctx, 1)); },
        o);
  }
  std::fprintf(stderr, "speculative: architecture '%s' is not one of llama, mamba, jamba\n",
               name.c_str());
  return 1;
}
