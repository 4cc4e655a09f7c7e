// The budget layout a bounded memory's state file records (bounded_state.hpp): the
// budget rule, where the budgets came from (one fixed budget, a per-layer schedule
// such as PyramidKV's, or per-KV-head budgets such as DuoAttention's) and the budget
// of every lane of a layer; AdaKV's pool records its per-head budget and alpha (the
// allocation it evicts by). A file loads only into a memory with the same layout:
// its cells were evicted to those budgets, and a loaded cache must evict as the
// saved one would have.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mnemo/base/status.hpp"
#include "mnemo/memory/bounded/bounded.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::memory::detail {

/// Bit 24 of the payload's layout word: a budget layout follows it.
inline constexpr std::uint32_t budgets_recorded = 1u << 24;

struct budget_layout {
  enum class kind : std::uint32_t { fixed = 0, per_layer = 1, per_head = 2, pooled = 3 };
  budget_rule rule = budget_rule::kept;
  kind source = kind::fixed;
  std::vector<std::uint32_t> lanes;  // [n_layer, lanes per layer] budgets
  float alpha = 0.0f;                // pooled (AdaKV): each head's safeguard share

  void write(byte_writer& w) const {
    w.put(static_cast<std::uint32_t>(rule));
    w.put(static_cast<std::uint32_t>(source));
    w.put(static_cast<std::uint32_t>(lanes.size()));
    for (std::uint32_t b : lanes) w.put(b);
    if (source == kind::pooled) w.put(alpha);
  }
  status read(byte_reader& r) {
    std::uint32_t ru = 0, so = 0, n = 0;
    if (!r.get(ru) || !r.get(so) || !r.get(n) || ru > 1 || so > 3 || n > r.remaining() / 4)
      return make_status(status_code::corrupt_data, "state_read: damaged budget layout");
    rule = static_cast<budget_rule>(ru);
    source = static_cast<kind>(so);
    lanes.resize(n);
    for (std::uint32_t& b : lanes) r.get(b);
    if (source == kind::pooled && !r.get(alpha))
      return make_status(status_code::corrupt_data, "state_read: damaged budget layout");
    return {};
  }
  bool operator==(const budget_layout&) const = default;

  /// "rule kept, budget 64" / "rule read, layer budgets 96, 64, 32" / "rule kept,
  /// head budgets 64, 8, 64, 8" (the first 8 lanes, then the count).
  std::string describe() const {
    std::string s = rule == budget_rule::kept ? "rule kept, " : "rule read, ";
    if (source == kind::fixed) return s + "budget " + std::to_string(lanes.empty() ? 0 : lanes[0]);
    if (source == kind::pooled) {
      char a[32];
      std::snprintf(a, sizeof a, "%g", static_cast<double>(alpha));
      return s + "AdaKV pool, budget " + std::to_string(lanes.empty() ? 0 : lanes[0]) +
             " per head, alpha " + a;
    }
    s += source == kind::per_layer ? "layer budgets " : "head budgets ";
    for (std::size_t i = 0; i < lanes.size() && i < 8; ++i)
      s += (i ? ", " : "") + std::to_string(lanes[i]);
    if (lanes.size() > 8) s += ", ... (" + std::to_string(lanes.size()) + " lanes)";
    return s;
  }
};

/// The layout of a configuration: one entry per (layer, lane), layer-major; per
/// layer lanes have one entry per layer, per KV head n_head_kv.
inline budget_layout budget_layout_of(const bounded_config& c) {
  budget_layout b;
  b.rule = c.rule;
  b.source = !c.head_budgets.empty()    ? budget_layout::kind::per_head
             : !c.layer_budgets.empty() ? budget_layout::kind::per_layer
                                        : budget_layout::kind::fixed;
  for (std::size_t l = 0; l < c.shape.n_layer; ++l)
    for (std::size_t h = 0; h < c.lanes_per_layer(); ++h)
      b.lanes.push_back(static_cast<std::uint32_t>(c.budget_of(l, h)));
  return b;
}

}  // namespace mnemo::memory::detail
