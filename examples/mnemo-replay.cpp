// mnemo-replay: runs a scenario in the fixtures' JSON format through mnemo::engine (any
// architecture it opens: docs/engine.md) and writes the logits in the fixtures' .bin
// format (f32 little-endian, one n_vocab row per token, in call order).
//
//   mnemo-replay MODEL.gguf SCENARIO.json OUT.bin [--memory KIND]
//                [--kv f32|f16|bf16|q8_0|q4_0] [--threads N] [--ctx N] [--ubatch N]
//                [--compare REF.bin TOL]
//
// --compare reads a reference .bin and exits 1 when any logit differs by more than
// TOL or the sizes differ (the ctest entry in tests/replay.cmake uses it).
// --memory is an engine memory kind (default full; auto is the architecture's default)
// and names the strategy of the attention layers: mamba has none (its layers always
// use recurrent state), and for jamba `full` and `split` mean hybrid and hybrid-split
// (Mamba layers on recurrent state). For a model with window and global layers
// (gemma2, gemma3), `full` is one full cache for every layer (the window a mask only),
// `iswa` the interleaved composite and `iswa-split` split streams on every layer.
// Four sequences share --ctx cells (split streams: --ctx / 4 each).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/scenario.hpp"

#include "mnemo/engine/engine.hpp"
#include "mnemo/gguf/file.hpp"

namespace {

using namespace mnemo;

struct options {
  std::string model, scenario, out;
  memory_kind memory = memory_kind::full;
  kv_type kv = kv_type::f32;
  int threads = 0;
  std::uint32_t n_ctx = 4096, n_ubatch = 512;
  std::string compare;
  double tol = 0;
};

int usage() {
  std::fprintf(stderr,
               "usage: mnemo-replay MODEL.gguf SCENARIO.json OUT.bin\n"
               "       [--memory auto|full|split|iswa|iswa-split|recurrent|hybrid|hybrid-split]\n"
               "       [--kv f32|f16|bf16|q8_0|q4_0] [--threads N] [--ctx N] [--ubatch N]\n"
               "       [--compare REF.bin TOL]\n");
  return 2;
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
      auto k = parse_memory_kind(v);
      if (!k.is_ok()) {
        std::fprintf(stderr, "mnemo-replay: %s\n", k.error().to_string().c_str());
        return false;
      }
      o.memory = *k;
    } else if (a == "--kv") {
      const char* v = next();
      auto t = parse_kv_type(v ? v : "");
      if (!t.is_ok()) {
        std::fprintf(stderr, "mnemo-replay: --kv takes f32, f16, bf16, q8_0 or q4_0\n");
        return false;
      }
      o.kv = *t;
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

/// --memory names the attention layers' strategy; the recurrent and hybrid
/// architectures take it as the engine's kind for the whole model.
result<memory_kind> memory_for(const std::string& path, memory_kind k) {
  MNEMO_ASSIGN_OR_RETURN(gguf::file f, gguf::file::open(path));
  MNEMO_ASSIGN_OR_RETURN(std::string_view arch, f.get_string("general.architecture"));
  if (arch == "mamba" && (k == memory_kind::full || k == memory_kind::split))
    return memory_kind::recurrent;
  if (arch == "jamba" && k == memory_kind::full) return memory_kind::hybrid;
  if (arch == "jamba" && k == memory_kind::split) return memory_kind::hybrid_split;
  return k;
}

/// Opens the engine for four sequences and replays the scenario; n_vocab is set before
/// the run (the scenario's n_vocab is checked against it).
status replay(const options& o, const mnemo_examples::scenario& sc, std::vector<float>& logits,
              std::uint32_t& n_vocab) {
  engine_options eo;
  MNEMO_ASSIGN_OR_RETURN(eo.memory, memory_for(o.model, o.memory));
  eo.kv = o.kv;
  eo.n_ctx = o.n_ctx;
  eo.n_seq_max = 4;
  eo.n_ubatch = o.n_ubatch;
  eo.n_batch = 0;  // each scenario call is decoded whole
  eo.n_threads = eo.n_threads_batch = o.threads;
  MNEMO_ASSIGN_OR_RETURN(engine e, engine::open(o.model, eo));
  n_vocab = e.n_vocab();
  if (sc.n_vocab != 0 && sc.n_vocab != n_vocab)
    return make_status(status_code::invalid_argument,
                       "the scenario expects n_vocab %u, the model has %u", sc.n_vocab, n_vocab);
  logits.reserve(sc.n_rows() * n_vocab);
  return mnemo_examples::run_scenario(e, sc, logits);
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
  auto sc = mnemo_examples::read_scenario(o.scenario);
  if (!sc.is_ok()) {
    std::fprintf(stderr, "mnemo-replay: %s\n", sc.error().to_string().c_str());
    return 1;
  }
  std::vector<float> logits;
  std::uint32_t n_vocab = 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (status st = replay(o, *sc, logits, n_vocab); !st) {
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
      o.scenario.c_str(), sc->calls.size(), sc->n_rows(), n_vocab, o.out.c_str(),
      std::string(to_string(o.memory)).c_str(), std::string(to_string(o.kv)).c_str(), dt * 1e3,
      static_cast<double>(sc->n_rows()) / dt);
  return o.compare.empty() ? 0 : compare(o.compare, logits, n_vocab, o.tol);
}
