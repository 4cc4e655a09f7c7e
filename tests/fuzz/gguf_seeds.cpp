// Writes the GGUF seed files (tests/fuzz/gguf_fuzz_common.hpp) into a directory, as the
// starting corpus of mnemo_fuzz_gguf.
#include <cstdio>
#include <string>

#include "fuzz/gguf_fuzz_common.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <existing corpus directory>\n", argv[0]);
    return 2;
  }
  const auto seeds = mnemo::gguf::fuzz::seed_files();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(argv[1]) + "/seed" + std::to_string(i) + ".gguf";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) != seeds[i].size()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    std::fclose(f);
  }
  return 0;
}
