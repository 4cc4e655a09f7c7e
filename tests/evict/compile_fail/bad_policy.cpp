// Must NOT compile (tests/evict.cmake): a policy without score() and protect()
// reaches bounded<>'s check, whose static_assert says what an eviction policy needs.
#include "mnemo/memory/bounded/bounded.hpp"

struct half_a_policy {
  static constexpr std::size_t state_floats = 0;
  static constexpr bool uses_attention = false;
  mnemo::evict::stats_request request(const mnemo::evict::step_info&) const noexcept { return {}; }
};

int main() {
  mnemo::memory::bounded_config cfg;
  auto m = mnemo::memory::bounded<half_a_policy, float>::make(cfg);
  return m.is_ok() ? 0 : 1;
}
