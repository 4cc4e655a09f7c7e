// mnemo-replay: runs a scenario in the fixtures' JSON format through a model (picked
// by the GGUF's general.architecture: k_architectures below), a memory strategy and
// mnemo::context, and writes the logits in the fixtures' .bin format (f32
// little-endian, one n_vocab row per token, in call order).
//
//   mnemo-replay MODEL.gguf SCENARIO.json OUT.bin [--memory full|split|iswa|iswa-split]
//                [--kv f32|f16|bf16|q8_0|q4_0] [--threads N] [--ctx N] [--ubatch N]
//                [--compare REF.bin TOL]
//
// --compare reads a reference .bin and exits 1 when any logit differs by more than
// TOL or the sizes differ (the ctest entry in tests/replay.cmake uses it).
// --memory names the strategy of the attention layers (mamba has none: its layers
// always use memory::recurrent; jamba routes its Mamba layers there). For a model with
// window and global layers (gemma2, gemma3), `full` is one full cache for every layer
// (the window is a mask only) and `iswa` the interleaved composite: global layers on a
// full cache of --ctx cells, window layers on a sliding window of
// pad(n_swa * 4 + --ubatch, 256) cells; `iswa-split` is split streams on every layer:
// --ctx cells per sequence for global layers, a window of pad(n_swa + --ubatch, 256)
// cells per sequence for window ones (attention_decoder::make_iswa_split).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/memory_factory.hpp"
#include "common/scenario.hpp"

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/model/architectures.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

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

/// The memory strategies this build offers; a new one adds a name here and, for the
/// attention decoders, a memory_maker in common/memory_factory.hpp.
constexpr std::string_view k_memories[] = {"full", "split", "iswa", "iswa-split"};
constexpr std::string_view k_kv_types[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};

int usage() {
  std::fprintf(stderr,
               "usage: mnemo-replay MODEL.gguf SCENARIO.json OUT.bin\n"
               "       [--memory full|split|iswa|iswa-split]\n"
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
        std::fprintf(stderr,
                     "mnemo-replay: unknown memory '%s' (this build has: full, split, iswa, "
                     "iswa-split)\n",
                     v);
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

template <class Model, class Memory>
status run_context(const Model& m, Memory mem, const options& o, const mnemo_examples::scenario& sc,
                   std::vector<float>& logits) {
  context_params p;
  p.n_ubatch = o.n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = o.threads;
  MNEMO_ASSIGN_OR_RETURN(auto ctx, (context<Model, Memory>::make(m, std::move(mem), p)));
  return mnemo_examples::run_scenario(ctx, sc, logits);
}

/// The attention decoders (llama, qwen2, qwen3, phi3, gemma2, gemma3): --memory full or
/// split x --kv through the examples' memory factory, or, for a model with window and
/// global layers, iswa / iswa-split (K/V f32 or f16).
template <class KE>
status run_iswa(const model::attention_decoder& m, const options& o,
                const mnemo_examples::scenario& sc, std::vector<float>& logits) {
  if (o.memory == "iswa") {
    MNEMO_ASSIGN_OR_RETURN(auto mem, m.make_iswa<KE>(o.n_ctx, 4, o.n_ubatch));
    return run_context(m, std::move(mem), o, sc, logits);
  }
  // split streams on every layer, per-stream windows
  MNEMO_ASSIGN_OR_RETURN(auto mem, m.make_iswa_split<KE>(o.n_ctx, 4, o.n_ubatch));
  return run_context(m, std::move(mem), o, sc, logits);
}
status run(const model::attention_decoder& m, const options& o, const mnemo_examples::scenario& sc,
           std::vector<float>& logits) {
  if (o.memory == "iswa" || o.memory == "iswa-split") {
    if (o.kv == "f16") return run_iswa<dtype::f16>(m, o, sc, logits);
    if (o.kv != "f32")
      return make_status(status_code::unsupported, "--memory %s: --kv %s (this build has f32, f16)",
                         o.memory.c_str(), o.kv.c_str());
    return run_iswa<float>(m, o, sc, logits);
  }
  mnemo_examples::runtime_options rt;
  rt.memory = o.memory;
  rt.kv = o.kv;
  rt.threads = o.threads;
  rt.n_ubatch = o.n_ubatch;
  rt.n_batch = 0;  // each scenario call is decoded whole
  return mnemo_examples::with_context(
      m, rt, 4, o.n_ctx, [&](auto& ctx) { return mnemo_examples::run_scenario(ctx, sc, logits); });
}

status run(const model::mamba_model& m, const options& o, const mnemo_examples::scenario& sc,
           std::vector<float>& logits) {
  MNEMO_ASSIGN_OR_RETURN(auto mem, memory::recurrent::make(m.recurrent_config(4)));
  return run_context(m, std::move(mem), o, sc, logits);
}

/// jamba: attention layers on --memory (full or split, K/V f32 or f16), Mamba layers on
/// memory::recurrent, through the per-layer composite.
template <class KV>
status run_hybrid(const model::jamba_model& m, KV kv, const options& o,
                  const mnemo_examples::scenario& sc, std::vector<float>& logits) {
  using mem_t = memory::layered<KV, memory::recurrent>;
  MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(m.recurrent_config(4)));
  MNEMO_ASSIGN_OR_RETURN(mem_t mem,
                         mem_t::make(m.layer_parts(0, 1), std::move(kv), std::move(rec)));
  return run_context(m, std::move(mem), o, sc, logits);
}
template <class KE>
status run_jamba(const model::jamba_model& m, const options& o, const mnemo_examples::scenario& sc,
                 std::vector<float>& logits) {
  if (o.memory == "split") {
    MNEMO_ASSIGN_OR_RETURN(auto kv,
                           memory::split_stream<KE>::make(m.split_stream_config(o.n_ctx, 4)));
    return run_hybrid(m, std::move(kv), o, sc, logits);
  }
  MNEMO_ASSIGN_OR_RETURN(auto kv, memory::full_cache<KE>::make(m.full_cache_config(o.n_ctx, 4)));
  return run_hybrid(m, std::move(kv), o, sc, logits);
}
status run(const model::jamba_model& m, const options& o, const mnemo_examples::scenario& sc,
           std::vector<float>& logits) {
  if (o.kv == "f16") return run_jamba<dtype::f16>(m, o, sc, logits);
  if (o.kv != "f32")
    return make_status(status_code::unsupported, "jamba: --kv %s (this build has f32, f16)",
                       o.kv.c_str());
  return run_jamba<float>(m, o, sc, logits);
}

/// Loads the model of one architecture and replays the scenario; n_vocab is set
/// before the run (the scenario's n_vocab is checked against it).
template <class Model, auto Load = &Model::load>
status replay_with(gguf::file file, const options& o, const mnemo_examples::scenario& sc,
                   std::vector<float>& logits, std::uint32_t& n_vocab) {
  MNEMO_ASSIGN_OR_RETURN(Model m, Load(std::move(file)));
  n_vocab = m.n_vocab();
  if (sc.n_vocab != 0 && sc.n_vocab != n_vocab)
    return make_status(status_code::invalid_argument,
                       "the scenario expects n_vocab %u, the model has %u", sc.n_vocab, n_vocab);
  logits.reserve(sc.n_rows() * n_vocab);
  return run(m, o, sc, logits);
}

/// The recurrent and hybrid architectures this replay runs, by general.architecture; the
/// attention decoders are model::k_attention_recipes.
struct architecture {
  std::string_view name;
  status (*replay)(gguf::file, const options&, const mnemo_examples::scenario&, std::vector<float>&,
                   std::uint32_t&);
};
constexpr architecture k_architectures[] = {
    {"mamba", replay_with<model::mamba_model>},
    {"jamba", replay_with<model::jamba_model>},
};

status replay(const options& o, const mnemo_examples::scenario& sc, std::vector<float>& logits,
              std::uint32_t& n_vocab) {
  MNEMO_ASSIGN_OR_RETURN(gguf::file file, gguf::file::open(o.model));
  MNEMO_ASSIGN_OR_RETURN(std::string_view arch, file.get_string("general.architecture"));
  const std::string name(arch);
  if (model::find_recipe(name) != nullptr)
    return replay_with<model::attention_decoder, &model::load_attention_decoder>(
               std::move(file), o, sc, logits, n_vocab)
        .with_context(o.model);
  for (const architecture& a : k_architectures)
    if (a.name == name)
      return a.replay(std::move(file), o, sc, logits, n_vocab).with_context(o.model);
  std::string known = model::attention_architectures();
  for (const architecture& a : k_architectures)
    known += (known.empty() ? "" : ", ") + std::string(a.name);
  return make_status(status_code::unsupported, "%s: architecture '%s' is not supported (%s)",
                     o.model.c_str(), name.c_str(), known.c_str());
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
      o.scenario.c_str(), sc->calls.size(), sc->n_rows(), n_vocab, o.out.c_str(), o.memory.c_str(),
      o.kv.c_str(), dt * 1e3, static_cast<double>(sc->n_rows()) / dt);
  return o.compare.empty() ? 0 : compare(o.compare, logits, n_vocab, o.tol);
}
