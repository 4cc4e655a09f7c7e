// libFuzzer entry point of every reader target (tests/fuzz/state_targets.hpp,
// text_targets.hpp), one binary for all: MNEMO_FUZZ_TARGET names the target
// (state_full, ..., tokenizer, chat_template, batch). With MNEMO_FUZZ_WRITE_SEEDS=DIR
// it writes that target's seed corpus into DIR and exits. See tests/fuzz.cmake.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/state_targets.hpp"
#include "fuzz/text_targets.hpp"

namespace {

mnemo::fuzz::target_fn g_target = nullptr;

int write_seeds(const mnemo::fuzz::target_info& t, const std::string& dir) {
  const auto seeds = t.seeds();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = dir + "/" + t.name + "-seed" + std::to_string(i);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) != seeds[i].size()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    std::fclose(f);
  }
  std::fprintf(stderr, "%s: %zu seeds in %s\n", t.name, seeds.size(), dir.c_str());
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("MNEMO_FUZZ_TARGET");
  auto all = mnemo::fuzz::state_targets();
  for (const auto& t : mnemo::fuzz::text_targets()) all.push_back(t);
  for (const auto& t : all) {
    if (name == nullptr || std::string(name) != t.name) continue;
    g_target = t.run;
    if (const char* dir = std::getenv("MNEMO_FUZZ_WRITE_SEEDS")) std::exit(write_seeds(t, dir));
    return 0;
  }
  std::fprintf(stderr, "set MNEMO_FUZZ_TARGET to one of:");
  for (const auto& t : all) std::fprintf(stderr, " %s", t.name);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string problem = g_target(data, size);
  if (!problem.empty()) {
    std::fprintf(stderr, "mnemo fuzz target: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
