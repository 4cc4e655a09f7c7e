// The deterministic session of every state-reader fuzz target (tests/fuzz/
// state_targets.hpp), so that CI runs them with GCC and under ASan/UBSan without
// libFuzzer: the seed corpus from valid files, then seeded mutations of it. The seed is
// printed; MNEMO_FUZZ_SEED=<n> replays another session.
#include <cstdio>
#include <ostream>

#include "fuzz/state_targets.hpp"
#include <gtest/gtest.h>

namespace mnemo::fuzz {
// Test names and listings show the target's name, not its bytes.
inline void PrintTo(const target_info& t, std::ostream* os) { *os << t.name; }
}  // namespace mnemo::fuzz

namespace {

using mnemo::fuzz::target_info;

constexpr std::size_t k_executions = 3000;

class StateReader : public ::testing::TestWithParam<target_info> {};

TEST_P(StateReader, SurvivesMutatedFiles) {
  const target_info& t = GetParam();
  const std::uint64_t seed = mnemo::fuzz::session_seed();
  std::printf("%s: seed %llu (MNEMO_FUZZ_SEED)\n", t.name, static_cast<unsigned long long>(seed));
  const auto seeds = t.seeds();
  ASSERT_GE(seeds.size(), 3u) << t.name << ": the seed corpus is missing files";
  mnemo::fuzz::outcomes() = {};
  const auto r = mnemo::fuzz::run_mutations(t.run, seeds, seed, k_executions);
  EXPECT_EQ(r.failure, "") << t.name << ", seed " << seed << ", execution " << r.executions
                           << ", input (" << r.failing_input.size()
                           << " bytes): " << mnemo::fuzz::hex_head(r.failing_input);
  // The valid seeds load, and most mutations are refused: both sides were exercised.
  const auto c = mnemo::fuzz::outcomes();
  std::printf("%s: %zu executions, %zu accepted, %zu refused\n", t.name, r.executions, c.accepted,
              c.refused);
  EXPECT_GE(c.accepted, seeds.size()) << t.name;
  EXPECT_GT(c.refused, r.executions / 2) << t.name;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, StateReader, ::testing::ValuesIn(mnemo::fuzz::state_targets()),
                         [](const auto& info) { return mnemo::fuzz::camel_name(info.param.name); });

}  // namespace
