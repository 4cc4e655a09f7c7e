// Randomised: valid batches (shared prefixes that split into branches, gaps in the
// sequence ids, memories that already hold positions, auto or explicit positions,
// repeated positions) are validated, then split with every strategy. Each split must
// (a) cover every token once, (b) respect n_ubatch, (c) keep its strategy's invariants,
// (d) keep each sequence's tokens in batch order, (e) report outputs in emission order.
// A failure prints the seed, the strategy and the first violation.
#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/batch/split.hpp"
#include "mnemo/batch/validate.hpp"

namespace {

using namespace mnemo;

struct scenario {
  batch b;
  position_table mem;
  std::vector<pos_t> expected_pos;  // what validate() must produce
  std::uint32_t n_seq_max = 1;
  bool coupled = false;
};

/// The tokens of one sequence set: they follow the stream `parent` (a superset).
struct stream {
  std::vector<seq_id> ids;  // shuffled: any member may be the primary id
  int parent = -1;
  int left = 0;
  pos_t next = 0;
  bool emitted = false;
};

class generator {
 public:
  explicit generator(std::uint32_t seed) : rng_(seed) {}

  scenario make() {
    scenario sc;
    sc.n_seq_max = static_cast<std::uint32_t>(pick(1, 10));
    std::vector<seq_id> ids(sc.n_seq_max);
    for (std::uint32_t s = 0; s < sc.n_seq_max; ++s) ids[s] = static_cast<seq_id>(s);
    std::shuffle(ids.begin(), ids.end(), rng_);
    ids.resize(static_cast<std::size_t>(pick(1, static_cast<int>(sc.n_seq_max))));
    const bool auto_pos = pick(0, 2) == 0;
    const bool coupling = pick(0, 1) == 1;
    for (std::size_t k = 0; k < ids.size();) {
      const std::size_t len = coupling ? static_cast<std::size_t>(pick(1, 4)) : 1;
      std::vector<seq_id> fam(ids.begin() + k, ids.begin() + std::min(ids.size(), k + len));
      k += fam.size();
      // Coupled sequences agree in the memory (docs/batch.md).
      pos_t start = auto_pos ? 0 : pick(0, 3);
      if (pick(0, 2) != 0) {
        const pos_t lo = pick(0, 5), hi = lo + pick(0, 20);
        for (seq_id s : fam) sc.mem.set(s, lo, hi);
        start = hi + 1;
      }
      add_family(fam, -1, start, sc.coupled);
    }
    emit(sc, auto_pos);
    return sc;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  void add_family(std::vector<seq_id> fam, int parent, pos_t start, bool& coupled) {
    stream st;
    st.ids = fam;
    std::shuffle(st.ids.begin(), st.ids.end(), rng_);
    st.parent = parent;
    st.left = fam.size() == 1 ? pick(1, 8) : pick(0, 4);
    st.next = start;
    const int n = st.left;
    streams_.push_back(st);
    const int me = static_cast<int>(streams_.size()) - 1;
    if (fam.size() == 1) return;
    coupled = coupled || n > 0;
    std::shuffle(fam.begin(), fam.end(), rng_);
    const auto cut = static_cast<std::ptrdiff_t>(pick(1, static_cast<int>(fam.size()) - 1));
    add_family({fam.begin(), fam.begin() + cut}, me, start + n, coupled);
    add_family({fam.begin() + cut, fam.end()}, me, start + n, coupled);
  }

  /// Interleaves the streams at random; a stream emits once its parent has finished.
  void emit(scenario& sc, bool auto_pos) {
    const int outputs = pick(0, 2);  // 0: omitted, 1: random flags, 2: some omitted
    for (;;) {
      std::vector<std::size_t> ready;
      for (std::size_t k = 0; k < streams_.size(); ++k)
        if (streams_[k].left > 0 && ancestors_done(k)) ready.push_back(k);
      if (ready.empty()) break;
      stream& st =
          streams_[ready[static_cast<std::size_t>(pick(0, static_cast<int>(ready.size()) - 1))]];
      // A repeated position now and then (allowed: docs/batch.md) with explicit positions.
      const bool repeat = !auto_pos && st.emitted && pick(0, 9) == 0;
      const pos_t p = repeat ? st.next - 1 : st.next++;
      st.emitted = true;
      --st.left;
      // Descendants continue after the last position of the stream.
      for (std::size_t c = 0; c < streams_.size(); ++c)
        for (int a = streams_[c].parent; a >= 0; a = streams_[static_cast<std::size_t>(a)].parent)
          if (a == static_cast<int>(&st - streams_.data())) streams_[c].next = st.next;
      const token_id tok = pick(0, 999);
      const std::span<const seq_id> ids(st.ids);
      const bool out = pick(0, 3) == 0;
      if (auto_pos) {
        if (outputs == 0 || (outputs == 2 && pick(0, 1)))
          sc.b.add(tok, ids);
        else
          sc.b.add(tok, ids, out);
      } else {
        sc.b.add(tok, p, ids, out);
      }
      sc.expected_pos.push_back(p);
    }
  }

  bool ancestors_done(std::size_t k) const {
    for (int a = streams_[k].parent; a >= 0; a = streams_[static_cast<std::size_t>(a)].parent)
      if (streams_[static_cast<std::size_t>(a)].left > 0) return false;
    return true;
  }

  std::mt19937 rng_;
  std::vector<stream> streams_;
};

/// The first violation of (a)..(e) for one complete split, or "".
std::string check(const validated_batch& v, const std::vector<ubatch>& us, const batch_splitter& sp,
                  const any_split& how) {
  std::ostringstream err;
  const std::uint32_t n = v.n_tokens();
  std::vector<int> seen(n, 0);
  std::vector<std::uint8_t> used(n, 0);
  std::vector<std::uint32_t> outs;
  std::vector<std::int64_t> last_of_seq(k_max_seq, -1);
  for (std::size_t u = 0; u < us.size(); ++u) {
    const ubatch& ub = us[u];
    err << "ubatch " << u << ": ";
    if (ub.empty() || ub.n_tokens() > how.n_ubatch)
      return err.str() + "size " + std::to_string(ub.n_tokens()) + " outside [1, n_ubatch]";
    if (ub.n_tokens() != ub.n_seqs * ub.n_seq_tokens || ub.seq_sets.size() != ub.n_seqs)
      return err.str() + "n_tokens != n_seqs * n_seq_tokens";
    seq_set all;
    for (std::uint32_t j = 0; j < ub.n_tokens(); ++j) {
      const std::uint32_t i = ub.idx[j];
      if (i >= n || seen[i]++) return err.str() + "token " + std::to_string(i) + " twice";
      used[i] = 1;
      if (ub.pos[j] != v.pos(i) || ub.seq[j] != v.primary(i) || ub.output[j] != v.output(i))
        return err.str() + "gathered data differ at token " + std::to_string(i);
      if (v.output(i)) outs.push_back(i);
      for (seq_id s : v.seqs(i)) {
        all.insert(s);
        if (last_of_seq[s] >= static_cast<std::int64_t>(i))
          return err.str() + "sequence " + std::to_string(s) + " out of order at token " +
                 std::to_string(i);
        last_of_seq[s] = i;
      }
    }
    std::vector<seq_id> unq;
    for (seq_id s = 0; s < k_max_seq; ++s)
      if (all.contains(s)) unq.push_back(s);
    if (unq != ub.seq_id_unq) return err.str() + "seq_id_unq is not the sorted union";

    if (how.kind == split_kind::simple) {
      if (ub.equal_seqs || ub.n_seq_tokens != 1) return err.str() + "simple shape";
      for (std::uint32_t j = 0; j < ub.n_tokens(); ++j)
        if (!(ub.seq_sets[j] == v.set_of(ub.idx[j]))) return err.str() + "simple set";
    } else if (how.kind == split_kind::equal) {
      if (!ub.equal_seqs) return err.str() + "equal_seqs false";
      seq_set taken;
      for (std::uint32_t k = 0; k < ub.n_seqs; ++k) {
        for (std::uint32_t i : ub.group(k))
          if (!(v.set_of(i) == ub.seq_sets[k])) return err.str() + "group with mixed sets";
        for (seq_id s = 0; s < k_max_seq; ++s)
          if (ub.seq_sets[k].contains(s) && taken.contains(s))
            return err.str() + "groups share sequence " + std::to_string(s);
        for (seq_id s = 0; s < k_max_seq; ++s)
          if (ub.seq_sets[k].contains(s)) taken.insert(s);
        if (how.sequential && k > 0 &&
            v.primary(ub.group(k)[0]) != v.primary(ub.group(k - 1)[0]) + 1)
          return err.str() + "sequential groups are not consecutive";
        if (how.n_keep_tail > 0) {  // what is left of the set: none, or a whole tail
          std::uint32_t left = 0;
          for (std::uint32_t i = 0; i < n; ++i) left += !used[i] && v.set_of(i) == ub.seq_sets[k];
          if (left != 0 && left < how.n_keep_tail)
            return err.str() + "a set keeps " + std::to_string(left) + " tokens, under the tail";
        }
      }
    } else {
      if (!ub.equal_seqs || ub.n_seqs != 1 || !(ub.seq_sets[0] == v.set_of(ub.idx[0])))
        return err.str() + "seq shape";
      for (std::uint32_t j = 1; j < ub.n_tokens(); ++j) {
        const seq_set& a = v.set_of(ub.idx[j]);
        const seq_set& b = v.set_of(ub.idx[j - 1]);
        for (seq_id s = 0; s < k_max_seq; ++s)
          if (a.contains(s) && !b.contains(s)) return err.str() + "sets do not nest";
      }
    }
    err.str("");
  }
  for (std::uint32_t i = 0; i < n; ++i)
    if (seen[i] != 1) return "token " + std::to_string(i) + " never emitted";
  if (outs != std::vector<std::uint32_t>(sp.out_ids().begin(), sp.out_ids().end()))
    return "out_ids differ from the emission order of outputs";
  const auto rows = sp.output_rows();
  for (std::size_t r = 0; r < outs.size(); ++r)
    if (rows[outs[r]] != static_cast<std::int32_t>(r)) return "output_rows is not the inverse";
  return "";
}

TEST(BatchSplitRandom, EveryStrategyKeepsItsInvariants) {
  int n_coupled = 0, n_splits = 0;
  for (std::uint32_t seed = 1; seed <= 3000; ++seed) {
    scenario sc = generator(seed).make();
    batch_limits lim;
    lim.n_seq_max = sc.n_seq_max;
    auto v = validate(sc.b, lim, sc.mem);
    ASSERT_TRUE(v.is_ok()) << "seed " << seed << ": " << v.error().to_string();
    ASSERT_EQ(std::vector<pos_t>(v->positions().begin(), v->positions().end()), sc.expected_pos)
        << "seed " << seed;
    ASSERT_EQ(v->has_coupled(), sc.coupled) << "seed " << seed;
    n_coupled += sc.coupled;

    std::mt19937 rng(seed * 7919u);
    const auto n_ub = static_cast<std::uint32_t>(std::uniform_int_distribution<int>(1, 12)(rng));
    const auto tail =
        n_ub > 1 ? static_cast<std::uint32_t>(std::uniform_int_distribution<int>(1, n_ub - 1)(rng))
                 : 0u;
    std::vector<any_split> hows{simple_split{n_ub}, equal_split{n_ub, false, 0},
                                equal_split{n_ub, false, tail}, seq_split{n_ub}};
    if (!sc.coupled) {
      hows.push_back(equal_split{n_ub, true, 0});
      hows.push_back(equal_split{n_ub, true, tail});
    }
    batch_splitter sp(*v);
    for (const any_split& how : hows) {
      auto us = sp.split_all(how);
      const std::string name = "kind " + std::to_string(int(how.kind)) + " n_ubatch " +
                               std::to_string(how.n_ubatch) + " sequential " +
                               std::to_string(how.sequential) + " keep_tail " +
                               std::to_string(how.n_keep_tail);
      ASSERT_TRUE(us.is_ok()) << "seed " << seed << ", " << name << ": " << us.error().to_string();
      ASSERT_EQ(check(*v, *us, sp, how), "") << "seed " << seed << ", " << name;
      ++n_splits;
    }
    if (sc.coupled) {  // the split-stream memories must refuse these batches, with a status
      auto us = sp.split_all(equal_split{n_ub, true, 0});
      ASSERT_FALSE(us.is_ok()) << "seed " << seed;
      ASSERT_EQ(sp.n_used(), 0u) << "seed " << seed;
    }
  }
  // The generator must exercise both kinds of batch.
  EXPECT_GT(n_coupled, 300);
  EXPECT_LT(n_coupled, 2700);
  EXPECT_GT(n_splits, 12000);
}

}  // namespace
