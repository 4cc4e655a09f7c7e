// The shared half of the *_fixtures_test.cpp files: load a model once per binary, read
// a scenario with llama.cpp's logits (.json + .bin), and compare our logits with them
// under a bound, printing the scenario, row, column and both values on failure.
//
//   const model::llama_model* m = fixture_harness::load_model<model::llama_model>("x.gguf");
//   fixture_harness::fixture_case fc;
//   ASSERT_NO_FATAL_FAILURE(fixture_harness::load_case("x.single", fc));
//   auto ours = replay(*m, fc.sc);
//   ASSERT_TRUE(ours.is_ok()) << ours.error().to_string();
//   fixture_harness::compare_logits("x.single kv f32", *ours, fc, m->n_vocab(), bound);
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/scenario.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"

namespace fixture_harness {

inline std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/" + name;
}

/// Opens fixture `gguf` with Model::open once for the whole binary (nullptr and a test
/// failure when it does not load).
template <class Model>
const Model* load_model(const std::string& gguf) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto it = models.find(gguf);
  if (it != models.end()) return it->second.get();
  auto m = Model::open(fixture(gguf));
  if (!m.is_ok()) {
    ADD_FAILURE() << m.error().to_string();
    return nullptr;
  }
  return (models[gguf] = std::make_unique<Model>(std::move(m).value())).get();
}

/// A scenario and the logits llama.cpp computed for it [n_rows, n_vocab].
struct fixture_case {
  mnemo_examples::scenario sc;
  std::vector<float> ref;
};

/// Reads `stem`.json and `stem`.bin (fatal failure when either does not read).
inline void load_case(const std::string& stem, fixture_case& out) {
  auto sc = mnemo_examples::read_scenario(fixture(stem + ".json"));
  ASSERT_TRUE(sc.is_ok()) << sc.error().to_string();
  auto ref = mnemo_examples::read_logits(fixture(stem + ".bin"));
  ASSERT_TRUE(ref.is_ok()) << ref.error().to_string();
  out.sc = std::move(sc).value();
  out.ref = std::move(ref).value();
}

/// Our logits for `sc`: a context over a full_cache<KE> of 4096 cells with the
/// fixtures' harness settings (4 sequences, `n_ubatch` tokens per micro-batch).
template <class KE, class Model>
mnemo::result<std::vector<float>> replay_full_cache(const Model& m,
                                                    const mnemo_examples::scenario& sc,
                                                    std::uint32_t n_ubatch = 512, int threads = 2) {
  using cache_t = mnemo::memory::full_cache<KE>;
  MNEMO_ASSIGN_OR_RETURN(cache_t cache, cache_t::make(m.full_cache_config(4096, 4)));
  mnemo::context_params p;
  p.n_ubatch = n_ubatch;
  p.n_seq_max = 4;
  p.n_threads = threads;
  MNEMO_ASSIGN_OR_RETURN(auto ctx, (mnemo::context<Model, cache_t>::make(m, std::move(cache), p)));
  std::vector<float> out;
  MNEMO_RETURN_IF_ERROR(mnemo_examples::run_scenario(ctx, sc, out));
  return out;
}

/// Largest allowed |ours - llama.cpp|: `value`, times the scenario's largest |logit|
/// when `relative`. `exact_argmax`: every row's arg-max must agree; otherwise a row's
/// arg-max may differ only when llama.cpp's own logits put our choice within 2 * bound
/// of its choice (each logit moves at most the bound, so a flip needs a top-2 gap
/// <= 2 * bound).
struct bound {
  float value;
  bool relative;
  bool exact_argmax;
};

inline std::size_t argmax(const float* row, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

/// Compares `ours` with fc.ref under `b`; `label` (the stem and the configuration)
/// starts every message and measurement line.
inline void compare_logits(const std::string& label, const std::vector<float>& ours,
                           const fixture_case& fc, std::size_t nv, const bound& b) {
  const std::vector<float>& ref = fc.ref;
  ASSERT_EQ(ours.size(), fc.sc.n_rows() * nv);
  ASSERT_EQ(ref.size(), ours.size()) << label << ": the .bin has the wrong size";

  float max_logit = 0, worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    max_logit = std::max(max_logit, std::fabs(ref[i]));
    const float d = std::fabs(ours[i] - ref[i]);
    if (!(d <= worst)) {  // NaN counts as worst
      worst = std::isnan(d) ? INFINITY : d;
      worst_i = i;
    }
  }
  const float tol = b.relative ? b.value * max_logit : b.value;
  std::printf("[ measure ] %s: max |diff| %.3g (bound %.3g), max |logit| %.3g\n", label.c_str(),
              worst, tol, max_logit);
  EXPECT_LE(worst, tol) << label << ": row " << worst_i / nv << ", column " << worst_i % nv
                        << ": ours " << ours[worst_i] << ", llama.cpp " << ref[worst_i];

  std::size_t flips = 0;
  for (std::size_t r = 0; r < fc.sc.n_rows(); ++r) {
    const float* o = ours.data() + r * nv;
    const float* f = ref.data() + r * nv;
    const std::size_t a = argmax(o, nv), e = argmax(f, nv);
    if (a == e) continue;
    ++flips;
    const float gap = f[e] - f[a];
    EXPECT_TRUE(!b.exact_argmax && gap <= 2 * tol)
        << label << ": row " << r << " arg-max " << a << " (ours " << o[a] << ", llama.cpp " << f[a]
        << ") but llama.cpp's is " << e << " (ours " << o[e] << ", llama.cpp " << f[e]
        << "); top-2 gap " << gap
        << (b.exact_argmax ? " (the arg-max must agree)"
                           : " > 2 * bound " + std::to_string(2 * tol));
  }
  if (flips) std::printf("[ measure ] %s: %zu arg-max flips (tiny gaps)\n", label.c_str(), flips);
}

/// "llama-tiny" "single" "f32" -> "LlamaTinySingleF32": a test-name suffix from parts
/// joined by '-' or '_'.
inline std::string camel_name(const std::string& joined) {
  std::string s;
  bool up = true;
  for (char c : joined) {
    if (c == '-' || c == '_') {
      up = true;
      continue;
    }
    s.push_back(up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    up = false;
  }
  return s;
}

}  // namespace fixture_harness
