// mnemo-replay: runs a scenario in the fixtures' JSON format through a Llama model,
// a memory strategy and mnemo::context, and writes the logits in the fixtures' .bin
// format (f32 little-endian, one n_vocab row per token, in call order).
//
//   mnemo-replay MODEL.gguf SCENARIO.json OUT.bin [--memory full]
//                [--kv f32|f16|bf16|q8_0|q4_0] [--threads N] [--ctx N] [--ubatch N]
//                [--compare REF.bin TOL]
//
// --compare reads a reference .bin and exits 1 when any logit differs by more than
// TOL or the sizes differ (the ctest entry in tests/replay.cmake uses it).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/scenario.hpp"

#include "mnemo/context.hpp"
#include "mnemo/memory/full_cache.hpp"
#include "mnemo/model/llama.hpp"

namespace {

using namespace mnemo;

struct options {
  std::string model, scenario, out;
  std::string memory = "full";
  std::string kv = "f32";
  int threads = 0;
  std::uint32_t n_ctx = 4096, n_ubatch = 512;
  std::string compare;
  double tol = 0;
};

/// The memory strategies this build offers; a new one adds a name here and a branch
/// in run_memory().
constexpr std::string_view k_memories[] = {"full"};
constexpr std::string_view k_kv_types[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};

int usage() {
  std::fprintf(stderr,
               "usage: mnemo-replay MODEL.gguf SCENARIO.json OUT.bin [--memory full]\n"
               "       [--kv f32|f16|bf16|q8_0|q4_0] [--threads N] [--ctx N] [--ubatch N]\n"
               "       [--compare REF.bin TOL]\n");
  return 2;
}

template <std::size_t N>
bool one_of(std::string_view v, const std::string_view (&names)[N]) {
  for (auto n : names)
    if (n == v) return true;
  return false;
}

bool parse_uint(const char* s, std::uint32_t& out) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (end == s || *end != '\0' || v > 1u << 30) return false;
  out = static_cast<std::uint32_t>(v);
  return true;
}

bool parse_args(int argc, char** argv, options& o) {
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    std::uint32_t u = 0;
    if (a == "--memory") {
      const char* v = next();
      if (!v) return false;
      o.memory = v;
      if (!one_of(o.memory, k_memories)) {
        std::fprintf(stderr, "mnemo-replay: unknown memory '%s' (this build has: full)\n", v);
        return false;
      }
    } else if (a == "--kv") {
      const char* v = next();
      if (!v || !one_of(v, k_kv_types)) {
        std::fprintf(stderr, "mnemo-replay: --kv takes f32, f16, bf16, q8_0 or q4_0\n");
        return false;
      }
      o.kv = v;
    } else if (a == "--threads" || a == "--ctx" || a == "--ubatch") {
      const char* v = next();
      if (!v || !parse_uint(v, u) || (a != "--threads" && u == 0)) {
        std::fprintf(stderr, "mnemo-replay: %s takes a number\n", argv[i - (v ? 1 : 0)]);
        return false;
      }
      if (a == "--threads") o.threads = static_cast<int>(u);
      if (a == "--ctx") o.n_ctx = u;
      if (a == "--ubatch") o.n_ubatch = u;
    } else if (a == "--compare") {
      const char* ref = next();
      const char* tol = next();
      char* end = nullptr;
      if (!ref || !tol || (o.tol = std::strtod(tol, &end), *end != '\0') || !(o.tol >= 0)) {
        std::fprintf(stderr, "mnemo-replay: --compare takes REF.bin and a tolerance >= 0\n");
        return false;
      }
      o.compare = ref;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "mnemo-replay: unknown option '%s'\n", argv[i]);
      return false;
    } else {
      pos.emplace_back(a);
    }
  }
  if (pos.size() != 3) return false;
  o.model = pos[0];
  o.scenario = pos[1];
  o.out = pos[2];
  return true;
}

template <class Memory>
status run_context(const model::llama_model& m, Memory mem, const options& o,
                   const mnemo_examples::scenario& sc, std::vector<float>& logits) {
  context_params p;
  p.n_ubatch = o.n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = o.threads;
  MNEMO_ASSIGN_OR_RETURN(auto ctx,
                         (context<model::llama_model, Memory>::make(m, std::move(mem), p)));
  return mnemo_examples::run_scenario(ctx, sc, logits);
}

template <class KE>
status run_memory(const model::llama_model& m, const options& o, const mnemo_examples::scenario& sc,
                  std::vector<float>& logits) {
  if (o.memory == "full") {
    using cache_t = memory::full_cache<KE>;
    MNEMO_ASSIGN_OR_RETURN(cache_t cache, cache_t::make(m.full_cache_config(o.n_ctx, 4)));
    return run_context(m, std::move(cache), o, sc, logits);
  }
  return make_status(status_code::unsupported, "memory '%s' is not available", o.memory.c_str());
}

status run(const model::llama_model& m, const options& o, const mnemo_examples::scenario& sc,
           std::vector<float>& logits) {
  if (o.kv == "f16") return run_memory<dtype::f16>(m, o, sc, logits);
  if (o.kv == "bf16") return run_memory<dtype::bf16>(m, o, sc, logits);
  if (o.kv == "q8_0") return run_memory<dtype::block_q8_0>(m, o, sc, logits);
  if (o.kv == "q4_0") return run_memory<dtype::block_q4_0>(m, o, sc, logits);
  return run_memory<float>(m, o, sc, logits);
}

int compare(const std::string& path, const std::vector<float>& ours, std::size_t n_vocab,
            double tol) {
  auto ref = mnemo_examples::read_logits(path);
  if (!ref.is_ok()) {
    std::fprintf(stderr, "mnemo-replay: %s\n", ref.error().to_string().c_str());
    return 1;
  }
  if (ref->size() != ours.size()) {
    std::fprintf(stderr, "mnemo-replay: %s has %zu values, the replay %zu\n", path.c_str(),
                 ref->size(), ours.size());
    return 1;
  }
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double d = std::fabs(static_cast<double>(ours[i]) - (*ref)[i]);
    if (!(d <= worst)) {
      worst = std::isnan(d) ? INFINITY : d;
      at = i;
    }
  }
  const bool ok = worst <= tol;
  std::printf(
      "compare with %s: max |diff| %.3g at row %zu, column %zu (ours %.6g, reference "
      "%.6g), tolerance %.3g: %s\n",
      path.c_str(), worst, at / n_vocab, at % n_vocab, ours.empty() ? 0.0 : ours[at],
      ours.empty() ? 0.0 : (*ref)[at], tol, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) return usage();
  auto m = model::llama_model::open(o.model);
  if (!m.is_ok()) {
    std::fprintf(stderr, "mnemo-replay: %s\n", m.error().to_string().c_str());
    return 1;
  }
  auto sc = mnemo_examples::read_scenario(o.scenario);
  if (!sc.is_ok()) {
    std::fprintf(stderr, "mnemo-replay: %s\n", sc.error().to_string().c_str());
    return 1;
  }
  if (sc->n_vocab != 0 && sc->n_vocab != m->n_vocab()) {
    std::fprintf(stderr, "mnemo-replay: the scenario expects n_vocab %u, the model has %u\n",
                 sc->n_vocab, m->n_vocab());
    return 1;
  }
  std::vector<float> logits;
  logits.reserve(sc->n_rows() * m->n_vocab());
  const auto t0 = std::chrono::steady_clock::now();
  if (status st = run(*m, o, *sc, logits); !st) {
    std::fprintf(stderr, "mnemo-replay: %s\n", st.to_string().c_str());
    return 1;
  }
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (status st = mnemo_examples::write_logits(o.out, logits); !st) {
    std::fprintf(stderr, "mnemo-replay: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf(
      "%s: %zu calls, %zu rows of %u logits -> %s (memory %s, kv %s, %.1f ms, %.0f tokens/s)\n",
      o.scenario.c_str(), sc->calls.size(), sc->n_rows(), m->n_vocab(), o.out.c_str(),
      o.memory.c_str(), o.kv.c_str(), dt * 1e3, static_cast<double>(sc->n_rows()) / dt);
  return o.compare.empty() ? 0 : compare(o.compare, logits, m->n_vocab(), o.tol);
}
