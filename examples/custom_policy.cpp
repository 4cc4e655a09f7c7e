// A user-defined eviction policy in a few lines: keep the tokens whose values are
// largest (the value-norm term of the h2o-vlen variant of H2O),
// plus the first token and a short recent window. The concept checks it at compile
// time (remove score() and the compiler says what is missing: docs/eviction.md).
// The same policy runs per KV head unchanged (third argument "head"): it sums the
// value norms over the token's heads, so every head keeps the same set; reading
// only head step.kv_head's row (step.first_head(), step.head_count()) would make
// the sets differ per head.
//
//   custom_policy [n_tokens] [budget] [layer|head]
//
// It ends with a self-check (every lane keeps exactly `budget` positions, position 0 and
// the newest ones among them): `self-check: PASS`, or `FAIL` and exit code 1.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "common/cli.hpp"
#include "common/random_llama.hpp"
#include <unistd.h>

#include "mnemo/context.hpp"
#include "mnemo/evict/concepts.hpp"
#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/model/llama.hpp"

// ---- the policy ------------------------------------------------------------------
struct value_norm_policy : mnemo::evict::policy_defaults {
  static constexpr std::size_t state_floats = 1;  // ||v|| summed over KV heads
  std::size_t n_head_kv = 1, d_v = 0;
  std::size_t recent = 4;

  void on_insert(const mnemo::evict::step_info&, mnemo::evict::slot_view v, std::size_t slot,
                 const float*, const float* val) const noexcept {
    float norms = 0.0f;
    for (std::size_t h = 0; h < n_head_kv; ++h) {
      float s = 0.0f;
      for (std::size_t i = 0; i < d_v; ++i) s += val[h * d_v + i] * val[h * d_v + i];
      norms += std::sqrt(s);
    }
    v.state[slot] = norms;
  }
  float score(const mnemo::evict::step_info&, mnemo::evict::slot_view v,
              std::size_t slot) const noexcept {
    return v.state[slot];  // the smallest values go first
  }
  bool protect(const mnemo::evict::step_info& s, mnemo::evict::slot_view v,
               std::size_t slot) const noexcept {
    return v.pos[slot] == 0 || mnemo::evict::in_recent_window(s, v, slot, recent);
  }
};
static_assert(mnemo::evict::eviction_policy<value_norm_policy>);
// ---------------------------------------------------------------------------------

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: custom_policy [n_tokens 1..4096] [budget 1..n_tokens] [layer|head]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mnemo;
  std::uint32_t n_tokens = 64, budget = 16;
  if (argc > 4 || (argc > 1 && !mnemo_examples::parse_u32(argv[1], n_tokens, 1, 4096)) ||
      (argc > 2 && !mnemo_examples::parse_u32(argv[2], budget, 1, n_tokens)))
    return usage();
  const std::string_view gran = argc > 3 ? argv[3] : "layer";
  if (gran != "layer" && gran != "head") return usage();

  mnemo_examples::random_llama_config rc;
  rc.n_vocab = 260, rc.n_embd = 64, rc.n_layer = 2, rc.n_head = 4, rc.n_head_kv = 2, rc.n_ff = 128;
  rc.weight_type = dtype::element_type::f32;
  // One file per process: the tests run this example twice in parallel, and rewriting a
  // file another process has mapped kills that process (SIGBUS).
  const auto path = (std::filesystem::temp_directory_path() /
                     ("mnemo_custom_policy_" + std::to_string(::getpid()) + ".gguf"))
                        .string();
  if (status st = mnemo_examples::write_random_llama(rc, path); !st) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  auto model = model::llama_model::open(path);
  std::error_code rm_ec;
  std::filesystem::remove(path, rm_ec);  // the mapping stays valid (POSIX)
  if (!model.is_ok()) return std::fprintf(stderr, "%s\n", model.error().message().c_str()), 1;
  const auto& m = model.value();

  value_norm_policy p;
  p.n_head_kv = m.hparams().n_head_kv;
  p.d_v = m.hparams().d_v;
  memory::bounded_config c;
  c.shape = m.kv_shape();
  c.budget = budget;
  c.max_ubatch = 32;
  c.rope = m.hparams().rope();
  if (gran == "head") c.granularity = memory::kv_granularity::per_kv_head;
  using memory_t = memory::bounded<value_norm_policy, dtype::f16>;
  auto mem = memory_t::make(c, p);
  if (!mem.is_ok()) return std::fprintf(stderr, "%s\n", mem.error().message().c_str()), 1;
  // n_seq_max of the context must match the memory's (context_params defaults to 1).
  auto ctx = context<model::llama_model, memory_t>::make(
      m, std::move(mem).value(), {.n_ubatch = 32, .n_seq_max = c.n_seq_max});
  if (!ctx.is_ok()) return std::fprintf(stderr, "%s\n", ctx.error().message().c_str()), 1;

  for (std::uint32_t t = 0; t < n_tokens; ++t) {
    batch b;
    b.add(static_cast<token_id>(3 + t % 250), static_cast<pos_t>(t), {0}, true);
    if (status st = ctx->decode(b); !st)
      return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  }

  // Self-check of the policy's contract in every lane: exactly `budget` positions kept,
  // among them position 0 and the `recent` newest (both protected).
  std::printf("decoded %u tokens with budget %u, %s lanes; layer 0 keeps positions:", n_tokens,
              budget, gran.data());
  bool ok = true;
  const pos_t newest_from = n_tokens > p.recent ? static_cast<pos_t>(n_tokens - p.recent) : 0;
  const std::size_t heads = gran == "head" ? m.hparams().n_head_kv : 1;
  for (std::size_t layer = 0; layer < m.hparams().n_layer; ++layer)
    for (std::size_t h = 0; h < heads; ++h) {
      std::size_t kept = 0, protected_kept = 0;
      for (pos_t q : ctx->memory().lane_of(0, layer, h).pos) {
        if (q < 0) continue;
        ++kept;
        if (q == 0 || q >= newest_from) ++protected_kept;
        if (layer == 0 && h == 0) std::printf(" %d", q);
      }
      const std::size_t want_protected =
          std::min<std::size_t>(budget, std::min<std::size_t>(n_tokens, p.recent + 1));
      if (kept != budget || protected_kept < want_protected) ok = false;
    }
  std::printf("\n%s", ctx->memory().report().to_string().c_str());
  std::printf("self-check: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
