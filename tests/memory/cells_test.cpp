// memory::cell_array against a naive cell list: random per-cell mutations and the
// bulk sequence operations (remove_seq, copy_seq, keep_seq, split_owner + move_seq,
// relocate) on 4096 cells, so that each sequence's position multiset spans several
// blocks. After every step every cell (position, owners, shift), used(),
// used_max_p1(), the pending-shift flag and, per sequence, seq_positions / min / max
// / seq_cells (recomputed from the naive cells) are compared. The semantics of the
// operations on a cache are checked by the model-based test; this one pins the
// bookkeeping at sizes that test cannot reach.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/memory/cells.hpp"

namespace {

using namespace mnemo;
using memory::cell_array;
using memory::pos_range;

using rng = mnemo_test::splitmix64;

struct naive_cell {
  pos_t pos = -1;
  seq_set owners;
  pos_t shift = 0;
};

/// The naive cells: every operation written the obvious way, one cell at a time.
struct naive {
  std::vector<naive_cell> c;
  bool has_shift = false;

  void free(std::size_t i) { c[i] = naive_cell{}; }
  std::size_t remove_seq(seq_id s, pos_range r) {
    std::size_t lowest = c.size();
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].pos < 0 || !r.contains(c[i].pos)) continue;
      if (s >= 0) {
        if (!c[i].owners.contains(s)) continue;
        c[i].owners.erase(s);
        if (!c[i].owners.empty()) continue;
      }
      free(i);
      lowest = std::min(lowest, i);
    }
    return lowest;
  }
};

std::string owners_str(const seq_set& o) {
  std::string r = "{";
  for (seq_id s = 0; s < k_max_seq; ++s)
    if (o.contains(s)) {
      if (r.size() > 1) r += ',';
      r += std::to_string(s);
    }
  return r + "}";
}

std::string compare(const cell_array& a, const naive& n, seq_id n_seq) {
  std::ostringstream o;
  std::size_t used = 0, hi = 0;
  for (std::size_t i = 0; i < n.c.size(); ++i) {
    const naive_cell& x = n.c[i];
    if (a.pos(i) != x.pos || !(a.owners(i) == x.owners) || a.shift(i) != x.shift) {
      o << "cell " << i << ": (" << a.pos(i) << ", " << owners_str(a.owners(i)) << ", "
        << a.shift(i) << "), naive (" << x.pos << ", " << owners_str(x.owners) << ", " << x.shift
        << ")";
      return o.str();
    }
    if (x.pos >= 0) ++used, hi = i + 1;
  }
  if (a.used() != used) o << "used " << a.used() << ", naive " << used;
  if (a.used_max_p1() != hi) o << "used_max_p1 " << a.used_max_p1() << ", naive " << hi;
  if (a.has_shift() != n.has_shift) o << "has_shift " << a.has_shift() << ", naive " << n.has_shift;
  if (!o.str().empty()) return o.str();
  for (seq_id s = 0; s < n_seq; ++s) {
    std::map<pos_t, int> m;
    for (const naive_cell& x : n.c)
      if (x.pos >= 0 && x.owners.contains(s)) ++m[x.pos];
    const auto got = a.seq_positions(s);
    const std::vector<std::pair<pos_t, int>> want(m.begin(), m.end());
    if (got != want) {
      std::size_t k = 0;
      while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
      o << "seq " << s << ": entry " << k << " of " << got.size() << " vs " << want.size();
      if (k < got.size()) o << ": (" << got[k].first << ", " << got[k].second << ")";
      if (k < want.size()) o << ", naive (" << want[k].first << ", " << want[k].second << ")";
      return o.str();
    }
    const pos_t lo = m.empty() ? -1 : m.begin()->first, top = m.empty() ? -1 : m.rbegin()->first;
    if (a.seq_pos_min(s) != lo || a.seq_pos_max(s) != top)
      o << "seq " << s << ": min/max " << a.seq_pos_min(s) << "/" << a.seq_pos_max(s) << ", naive "
        << lo << "/" << top;
    std::size_t cnt = 0;
    for (const auto& [p, k] : m) cnt += static_cast<std::size_t>(k);
    if (a.seq_cells(s) != cnt)
      o << "seq " << s << ": " << a.seq_cells(s) << " cells, naive " << cnt;
    if (!o.str().empty()) return o.str();
  }
  return "";
}

constexpr std::size_t k_cells = 4096;

void run_seed(std::uint64_t seed, int steps) {
  rng g{seed};
  const seq_id n_seq = static_cast<seq_id>(g.range(1, 6));
  cell_array a(k_cells);
  naive n{std::vector<naive_cell>(k_cells)};
  std::vector<pos_t> next(static_cast<std::size_t>(n_seq), 0);  // decode positions
  auto rand_cell = [&] { return static_cast<std::size_t>(g.range(0, k_cells - 1)); };
  auto find = [&](bool want_empty, std::size_t from) {
    for (std::size_t k = 0; k < k_cells; ++k) {
      const std::size_t i = (from + k) % k_cells;
      if ((n.c[i].pos < 0) == want_empty) return i;
    }
    return k_cells;
  };
  auto rand_owners = [&] {
    seq_set o;
    do
      for (seq_id s = 0; s < n_seq; ++s)
        if (g.range(0, 2) == 0) o.insert(s);
    while (o.empty());
    return o;
  };
  auto rand_range = [&] {
    const pos_t top = *std::max_element(next.begin(), next.end()) + 8;
    const pos_t p0 = g.range(0, 5) == 0 ? -1 : static_cast<pos_t>(g.range(0, top));
    const pos_t p1 = g.range(0, 3) == 0 ? -1 : static_cast<pos_t>(g.range(0, top));
    return pos_range::of(p0, p1);
  };

  for (int step = 0; step < steps; ++step) {
    std::ostringstream op;
    const auto kind = g.range(0, 99);
    if (kind < 30) {
      // A decode-like run: positions continuing one sequence (or a shared prefix).
      const std::size_t len = static_cast<std::size_t>(g.range(1, 600));
      const seq_id s = static_cast<seq_id>(g.range(0, n_seq - 1));
      const seq_set o = g.range(0, 4) == 0 ? rand_owners() : seq_set::of(s);
      op << "occupy " << len << " cells for " << owners_str(o);
      std::size_t at = find(true, rand_cell());
      for (std::size_t k = 0; k < len && at < k_cells; ++k) {
        const pos_t p = g.range(0, 9) == 0
                            ? static_cast<pos_t>(g.range(0, next[static_cast<std::size_t>(s)] + 1))
                            : next[static_cast<std::size_t>(s)]++;
        a.occupy(at, p, o);
        n.c[at] = {p, o, 0};
        at = find(true, at);
      }
    } else if (kind < 38) {
      const std::size_t i = rand_cell();
      op << "release(" << i << ")";
      a.release(i);
      n.free(i);
    } else if (kind < 44) {
      const std::size_t i = find(false, rand_cell());
      if (i == k_cells) continue;
      const seq_id s = static_cast<seq_id>(g.range(0, n_seq - 1));
      op << (kind < 41 ? "add_owner(" : "remove_owner(") << i << ", " << s << ")";
      if (kind < 41) {
        a.add_owner(i, s);
        n.c[i].owners.insert(s);
      } else {
        const bool want = n.c[i].owners.contains(s) && n.c[i].owners.count() == 1;
        n.c[i].owners.erase(s);
        if (n.c[i].owners.empty()) n.free(i);
        ASSERT_EQ(a.remove_owner(i, s), want) << "seed " << seed << ", step " << step;
      }
    } else if (kind < 50) {
      const std::size_t i = find(false, rand_cell());
      if (i == k_cells) continue;
      const pos_t p = static_cast<pos_t>(g.range(-3, n.c[i].pos + 50));
      op << "move(" << i << ", " << p << ")";
      a.move(i, p);
      if (p < 0) {
        n.free(i);
      } else {
        n.c[i].shift += p - n.c[i].pos;
        n.c[i].pos = p;
        n.has_shift = true;
      }
    } else if (kind < 56) {
      const std::size_t from = find(false, rand_cell()), to = find(true, rand_cell());
      if (from == k_cells || to == k_cells || to > from) continue;
      op << "relocate(" << from << ", " << to << ")";
      a.relocate(from, to);
      n.c[to] = n.c[from];
      n.free(from);
    } else if (kind < 70) {
      const seq_id s = static_cast<seq_id>(g.range(-1, n_seq - 1));
      const pos_range r = rand_range();
      op << "remove_seq(" << s << ", [" << r.p0 << ", " << r.p1 << "))";
      const std::size_t want = n.remove_seq(s, r);
      ASSERT_EQ(a.remove_seq(s, r), want)
          << "seed " << seed << ", step " << step << ": " << op.str();
    } else if (kind < 80) {
      const seq_id src = static_cast<seq_id>(g.range(0, n_seq - 1)),
                   dst = static_cast<seq_id>(g.range(0, n_seq - 1));
      if (src == dst) continue;
      const pos_range r = rand_range();
      op << "copy_seq(" << src << ", " << dst << ", [" << r.p0 << ", " << r.p1 << "))";
      const std::size_t want = n.remove_seq(dst, r);
      for (naive_cell& x : n.c)
        if (x.pos >= 0 && r.contains(x.pos) && x.owners.contains(src)) x.owners.insert(dst);
      ASSERT_EQ(a.copy_seq(src, dst, r), want)
          << "seed " << seed << ", step " << step << ": " << op.str();
    } else if (kind < 83) {
      const seq_id s = static_cast<seq_id>(g.range(0, n_seq - 1));
      op << "keep_seq(" << s << ")";
      std::size_t want = k_cells;
      for (std::size_t i = 0; i < k_cells; ++i) {
        if (n.c[i].pos < 0) continue;
        if (!n.c[i].owners.contains(s)) {
          n.free(i);
          want = std::min(want, i);
        } else {
          n.c[i].owners = seq_set::of(s);
        }
      }
      ASSERT_EQ(a.keep_seq(s), want) << "seed " << seed << ", step " << step;
    } else if (kind < 97) {
      // seq_add / seq_div as full_cache runs them: shared cells split off, then moved.
      const seq_id s = static_cast<seq_id>(g.range(0, n_seq - 1));
      const pos_range r = rand_range();
      const bool div = g.range(0, 1) == 0;
      const pos_t delta = static_cast<pos_t>(g.range(-300, 300));
      const int d = static_cast<int>(g.range(1, 4));
      auto f = [&](pos_t p) { return div ? p / d : p + delta; };
      op << "split + move_seq(" << s << ", [" << r.p0 << ", " << r.p1 << "), " << (div ? "/" : "+")
         << (div ? d : delta) << ")";
      std::vector<std::size_t> mine, shared;
      for (std::size_t i = 0; i < k_cells; ++i)
        if (n.c[i].pos >= 0 && r.contains(n.c[i].pos) && n.c[i].owners.contains(s))
          (n.c[i].owners.count() > 1 ? shared : mine).push_back(i);
      std::size_t to = 0;
      bool room = true;
      for (std::size_t from : shared) {
        while (to < k_cells && n.c[to].pos >= 0) ++to;
        if (to == k_cells) {
          room = false;
          break;
        }
        a.split_owner(from, to, s);
        n.c[from].owners.erase(s);
        n.c[to] = {n.c[from].pos, seq_set::of(s), n.c[from].shift};
        n.has_shift = n.has_shift || n.c[to].shift != 0;
        mine.push_back(to);
      }
      if (!room) {  // undo nothing: the split cells are valid states; skip the move
        ASSERT_TRUE(compare(a, n, n_seq).empty()) << "seed " << seed << ", step " << step;
        continue;
      }
      bool want = false;
      for (std::size_t i : mine) {
        const pos_t p = f(n.c[i].pos);
        if (p < 0) {
          n.free(i);
          want = true;
        } else {
          n.c[i].shift += p - n.c[i].pos;
          n.c[i].pos = p;
          n.has_shift = true;
        }
      }
      ASSERT_EQ(a.move_seq(s, r, mine, f), want)
          << "seed " << seed << ", step " << step << ": " << op.str();
    } else {
      op << (kind < 99 ? "clear_shifts()" : "clear()");
      if (kind < 99) {
        a.clear_shifts();
        for (naive_cell& x : n.c) x.shift = 0;
      } else {
        a.clear();
        for (naive_cell& x : n.c) x = naive_cell{};
        std::fill(next.begin(), next.end(), 0);
      }
      n.has_shift = false;
    }
    const std::string e = compare(a, n, n_seq);
    ASSERT_TRUE(e.empty()) << "seed " << seed << ", step " << step << " (" << op.str()
                           << "): " << e;
  }
}

TEST(CellArray, BulkOperationsKeepMultisetsExact) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    run_seed(seed, 400);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
