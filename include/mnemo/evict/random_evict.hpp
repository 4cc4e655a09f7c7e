// Random eviction: a baseline that every informed policy must beat. Each token gets a
// uniform score at insert from a hash of (seed, layer, KV head, position), so runs are
// deterministic and a token's fate does not depend on the order of the calls.
#pragma once

#include <cstdint>

#include "mnemo/evict/concepts.hpp"

namespace mnemo::evict {

struct random_evict : policy_defaults {
  static constexpr std::size_t state_floats = 1;  // the token's uniform draw
  std::uint64_t seed = 1;

  void on_insert(const step_info& s, slot_view v, std::size_t slot, const float*,
                 const float*) const noexcept {
    // splitmix64 finaliser over the token's identity; 24 bits are exact in a float.
    std::uint64_t z = seed ^ (static_cast<std::uint64_t>(v.pos[slot]) * 0x9e3779b97f4a7c15ull) ^
                      (static_cast<std::uint64_t>(s.layer) << 40) ^
                      (static_cast<std::uint64_t>(s.kv_head) << 52);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    v.state[slot] = static_cast<float>(z >> 40) / 16777216.0f;
  }
  float score(const step_info&, slot_view v, std::size_t slot) const noexcept {
    return v.state[slot];
  }
};
static_assert(eviction_policy<random_evict>);

}  // namespace mnemo::evict
