// The deterministic session of the tokenizer, chat-template and batch-validation fuzz
// targets (tests/fuzz/text_targets.hpp), so that CI runs them with GCC and under
// ASan/UBSan without libFuzzer: the seed corpus, then seeded mutations of it (the
// tokenizer's now and then grown to tens of KiB). The seed is printed;
// MNEMO_FUZZ_SEED=<n> replays another session.
#include <cstdio>
#include <ostream>
#include <string>

#include "fuzz/text_targets.hpp"
#include <gtest/gtest.h>

namespace mnemo::fuzz {
// Test names and listings show the target's name, not its bytes.
inline void PrintTo(const target_info& t, std::ostream* os) { *os << t.name; }
}  // namespace mnemo::fuzz

namespace {

using mnemo::fuzz::target_info;

constexpr std::size_t k_executions = 3000;

class TextReader : public ::testing::TestWithParam<target_info> {};

TEST_P(TextReader, SurvivesMutatedInput) {
  const target_info& t = GetParam();
  if (std::string(t.name) == "tokenizer" && mnemo::fuzz::text_detail::tokenizers().size() < 2)
    GTEST_SKIP() << "the tokenizer fixtures are missing (MNEMO_FIXTURES_DIR)";
  const std::uint64_t seed = mnemo::fuzz::session_seed();
  std::printf("%s: seed %llu (MNEMO_FUZZ_SEED)\n", t.name, static_cast<unsigned long long>(seed));
  const auto seeds = t.seeds();
  mnemo::fuzz::outcomes() = {};
  const auto r = mnemo::fuzz::run_mutations(
      t.run, seeds, seed, k_executions,
      std::string(t.name) == "tokenizer" ? &mnemo::fuzz::grow_sometimes : nullptr);
  EXPECT_EQ(r.failure, "") << t.name << ", seed " << seed << ", execution " << r.executions
                           << ", input (" << r.failing_input.size()
                           << " bytes): " << mnemo::fuzz::hex_head(r.failing_input);
  const auto c = mnemo::fuzz::outcomes();
  std::printf("%s: %zu executions, %zu accepted, %zu refused\n", t.name, r.executions, c.accepted,
              c.refused);
  // The valid seeds are accepted, so the checks behind acceptance ran.
  EXPECT_GE(c.accepted, seeds.size() / 2) << t.name;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, TextReader, ::testing::ValuesIn(mnemo::fuzz::text_targets()),
                         [](const auto& info) { return mnemo::fuzz::camel_name(info.param.name); });

}  // namespace
