// Deterministic mutation test of the GGUF reader: thousands of seeded mutations of small
// valid files (bit flips, byte sets, truncations, insertions, deletions, u32/u64 fields
// overwritten with extreme values). Each mutant either opens, and then every value and
// tensor byte it exposes can be read (the walk checks that views stay in the file), or
// fails with corrupt_data / unsupported. Run under ASan/UBSan to catch any read past the
// buffer: the mutant lives in an exactly sized heap block.
//
// To replay one case: MNEMO_GGUF_MUTATION_CASE=<seed file>:<case> prints that case's
// operations and runs only it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "fuzz/gguf_fuzz_common.hpp"
#include <gtest/gtest.h>

#include "mnemo/gguf/file.hpp"

namespace {

using mnemo::status_code;
namespace gguf = mnemo::gguf;

constexpr std::uint64_t k_seed = 0x6767756620u;  // "gguf "
constexpr int k_cases_per_file = 25000;

std::uint64_t extreme(std::mt19937_64& rng, std::size_t file_size) {
  const std::uint64_t values[] = {0,
                                  1,
                                  3,
                                  4,
                                  0x7f,
                                  0xff,
                                  0x8000'0000u,
                                  0xffff'ffffu,
                                  std::uint64_t{1} << 32,
                                  std::uint64_t{1} << 40,
                                  std::uint64_t{1} << 61,
                                  std::uint64_t{1} << 62,
                                  std::uint64_t{1} << 63,
                                  ~std::uint64_t{0} >> 1,
                                  ~std::uint64_t{0},
                                  file_size,
                                  file_size + 1,
                                  file_size - 1};
  if (rng() % 4 == 0) return rng();
  return values[rng() % std::size(values)];
}

/// Applies 1..4 random operations; `log` (when not null) gets a line per operation.
void mutate(std::vector<std::byte>& b, std::mt19937_64& rng, std::string* log) {
  const int n_ops = 1 + static_cast<int>(rng() % 4);
  for (int op = 0; op < n_ops; ++op) {
    const std::size_t size = b.size();
    const std::size_t pos = size == 0 ? 0 : rng() % size;
    const int kind = static_cast<int>(rng() % 7);
    char line[96];
    std::snprintf(line, sizeof line, "op %d at %zu of %zu\n", kind, pos, size);
    if (log) *log += line;
    switch (kind) {
      case 0:  // bit flip
        if (size) b[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
        break;
      case 1:  // byte set
        if (size) b[pos] = static_cast<std::byte>(rng());
        break;
      case 2:  // truncate
        b.resize(pos);
        break;
      case 3: {  // insert 1..16 bytes
        const std::size_t n = 1 + rng() % 16;
        std::vector<std::byte> ins(n);
        for (auto& x : ins) x = static_cast<std::byte>(rng());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos), ins.begin(), ins.end());
        break;
      }
      case 4: {  // delete 1..16 bytes
        const std::size_t n = std::min<std::size_t>(1 + rng() % 16, size - pos);
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos),
                b.begin() + static_cast<std::ptrdiff_t>(pos + n));
        break;
      }
      case 5: {  // u64 field
        const std::uint64_t v = extreme(rng, size);
        if (pos + 8 <= size) std::memcpy(b.data() + pos, &v, 8);
        break;
      }
      case 6: {  // u32 field
        const auto v = static_cast<std::uint32_t>(extreme(rng, size));
        if (pos + 4 <= size) std::memcpy(b.data() + pos, &v, 4);
        break;
      }
    }
  }
}

struct tally {
  int opened = 0;
  std::map<status_code, int> failed;
};

/// Opens one mutant from an exactly sized heap copy (so ASan sees any overread).
void run_case(const std::vector<std::byte>& mutant, std::size_t file, int c, tally& t) {
  auto copy = std::make_unique<std::byte[]>(mutant.size() + (mutant.empty() ? 1 : 0));
  if (!mutant.empty()) std::memcpy(copy.get(), mutant.data(), mutant.size());
  auto f = gguf::file::from_bytes(std::span<const std::byte>(copy.get(), mutant.size()));
  if (!f.is_ok()) {
    const status_code code = f.error().code();
    ++t.failed[code];
    EXPECT_TRUE(code == status_code::corrupt_data || code == status_code::unsupported)
        << "seed file " << file << " case " << c << ": " << f.error().to_string();
    EXPECT_NE(f.error().message().find("gguf"), std::string::npos) << f.error().to_string();
    return;
  }
  ++t.opened;
  bool consistent = false;
  const std::uint64_t sum = mnemo::gguf::fuzz::walk(*f, consistent);
  EXPECT_TRUE(consistent) << "seed file " << file << " case " << c << " (checksum " << sum << ")";
}

TEST(GgufMutation, SeededMutantsNeverCrash) {
  const auto seeds = mnemo::gguf::fuzz::seed_files();
  int only_file = -1, only_case = -1;
  if (const char* e = std::getenv("MNEMO_GGUF_MUTATION_CASE"))
    std::sscanf(e, "%d:%d", &only_file, &only_case);

  tally t;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    {  // the seed itself must open and walk cleanly
      auto f = gguf::file::from_bytes(seeds[s]);
      ASSERT_TRUE(f.is_ok()) << "seed file " << s << ": " << f.error().to_string();
      bool consistent = false;
      mnemo::gguf::fuzz::walk(*f, consistent);
      ASSERT_TRUE(consistent) << "seed file " << s;
    }
    std::mt19937_64 rng(k_seed + s);
    for (int c = 0; c < k_cases_per_file; ++c) {
      std::vector<std::byte> m = seeds[s];
      const bool replay = static_cast<int>(s) == only_file && c == only_case;
      std::string log;
      mutate(m, rng, replay ? &log : nullptr);
      if (only_file >= 0 && !replay) continue;
      if (replay) std::fprintf(stderr, "seed file %zu case %d:\n%s", s, c, log.c_str());
      run_case(m, s, c, t);
    }
  }
  if (only_file >= 0) return;
  int failed = 0;
  for (const auto& [code, n] : t.failed) failed += n;
  std::printf("mutants: %d opened, %d refused (corrupt_data %d, unsupported %d)\n", t.opened,
              failed, t.failed[status_code::corrupt_data], t.failed[status_code::unsupported]);
  // Both outcomes must be common, or the mutations are not exercising the reader.
  const int total = static_cast<int>(seeds.size()) * k_cases_per_file;
  EXPECT_GT(t.opened, total / 50);
  EXPECT_GT(failed, total / 4);
  EXPECT_GT(t.failed[status_code::unsupported], 0);
}

}  // namespace
