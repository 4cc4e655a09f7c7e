// The model-based test of mnemo::context: random sequences of decodes, sequence
// operations, state saves and loads, and failures injected in the middle of a decode
// (an allocation failure in apply() of some micro-batch, an abort between layers), of a
// state write and of a state read, against a reference that holds only each sequence's
// token history and recomputes it in a fresh context:
//  - a successful decode's output rows equal the reference's logits of the same
//    history (within 1e-4 * max|logit|: the reference decodes in one micro-batch, from
//    position 0, the tested context in small micro-batches at shifted positions);
//  - a refused or failed operation leaves the state bytes exactly as before, no logits,
//    and the reference unchanged; only refusals the strategy documents are allowed.
// A Kind names the model, the memory under test (wrapped in `faulty`), the reference
// memory and which refusals the strategy may return. A failure prints the seed, the
// operation's index and what it did.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/slow_build.hpp"
#include "common/splitmix64.hpp"
#include <gtest/gtest.h>

#include "mnemo/context.hpp"

namespace mnemo_test::ctx_model {

using namespace mnemo;

/// The memory under test, with failures on request: apply() of micro-batch
/// `fail_apply_at` reports an allocation failure (after the earlier micro-batches of the
/// decode were applied and computed), and a state write stops after `fail_write_after`
/// bytes.
template <class M>
struct faulty : M {
  explicit faulty(M&& m) : M(std::move(m)) {}
  int fail_apply_at = -1;
  std::optional<std::size_t> fail_write_after;

  status apply(std::size_t u, const memory::ubatch_tokens& ub) {
    if (static_cast<int>(u) == fail_apply_at)
      return make_status(status_code::no_space,
                         "injected allocation failure in apply() of micro-batch %zu", u);
    return M::apply(u, ub);
  }
};

template <class M>
status state_write(faulty<M>& m, seq_id s, std::vector<std::uint8_t>& out) {
  M& inner = m;
  MNEMO_RETURN_IF_ERROR(state_write(inner, s, out));
  if (!m.fail_write_after) return {};
  out.resize(std::min(out.size(), *m.fail_write_after));
  return make_status(status_code::io_error, "injected write failure after %zu bytes", out.size());
}
template <class M>
status state_read(faulty<M>& m, std::span<const std::uint8_t> data, seq_id dest) {
  M& inner = m;
  return state_read(inner, data, dest);
}

inline constexpr seq_id k_seqs = 4;
inline constexpr std::size_t k_max_len = 40;       // tokens per sequence before it is cleared
inline constexpr std::uint32_t k_ubatch = 6;       // small: most decodes span micro-batches
inline constexpr std::size_t k_header_bytes = 80;  // a state file's header (state_format.hpp)

/// Each sequence's tokens and the position of its first one.
struct history {
  std::vector<std::vector<token_id>> tokens = std::vector<std::vector<token_id>>(k_seqs);
  std::vector<pos_t> base = std::vector<pos_t>(k_seqs, 0);
  void clear(seq_id s) {
    tokens[s].clear();
    base[s] = 0;
  }
};

/// Counts of what ran, so a run that refused everything fails.
struct tally {
  int decodes = 0, compared = 0, failed_decodes = 0, rm_suffix = 0, copies = 0, shifts = 0,
      loads = 0, refused = 0, bad_reads = 0, bad_writes = 0;
};

template <class Kind>
class runner {
 public:
  using model_t = typename Kind::model_t;
  using memory_t = faulty<typename Kind::memory_t>;
  using ctx_t = context<model_t, memory_t>;
  using ref_t = context<model_t, typename Kind::ref_memory_t>;

  runner(const model_t& m, std::uint64_t seed) : m_(&m), rng_{seed}, seed_(seed) {
    context_params p;
    p.n_ubatch = k_ubatch;
    p.n_seq_max = k_seqs;
    p.n_threads = 1;
    p.hooks.abort = {&runner::abort_now, this};
    auto mem = Kind::make_memory(m);
    EXPECT_TRUE(mem.is_ok()) << mem.error().to_string();
    auto c = ctx_t::make(m, memory_t(std::move(mem).value()), p);
    EXPECT_TRUE(c.is_ok()) << c.error().to_string();
    ctx_.emplace(std::move(c).value());
    p.n_ubatch = 64;
    p.n_seq_max = 1;
    p.hooks = {};
    auto rm = Kind::make_ref_memory(m);
    EXPECT_TRUE(rm.is_ok()) << rm.error().to_string();
    auto r = ref_t::make(m, std::move(rm).value(), p);
    EXPECT_TRUE(r.is_ok()) << r.error().to_string();
    ref_.emplace(std::move(r).value());
  }

  /// Runs n_ops random operations; stops at the first failure.
  void run(int n_ops) {
    for (op_ = 0; op_ < n_ops && !::testing::Test::HasFatalFailure(); ++op_) {
      const int r = static_cast<int>(rng_.range(0, 99));
      const seq_id s = static_cast<seq_id>(rng_.range(0, k_seqs - 1));
      if (r < 40)
        decode(r < 26 ? fault::none : r < 33 ? fault::apply : fault::abort);
      else if (r < 50)
        rm_suffix(s);
      else if (r < 53)
        expect_ok(ctx_->seq_rm(s, -1, -1), "seq_rm whole"), h_.clear(s);
      else if (r < 61)
        copy(s, static_cast<seq_id>((s + 1 + rng_.range(0, k_seqs - 2)) % k_seqs));
      else if (r < 63)
        keep(s);
      else if (r < 68)
        shift(s);
      else if (r < 74)
        save(r < 71 ? -1 : s);
      else if (r < 82)
        load(r < 78 ? -1 : s);
      else if (r < 88)
        bad_write(r < 85 ? -1 : s);
      else
        bad_read(r < 94 ? -1 : s);
      if (::testing::Test::HasFatalFailure()) break;
      check_positions();
    }
  }

  const tally& counts() const { return t_; }

 private:
  enum class fault { none, apply, abort };

  static bool abort_now(void* user) {
    auto* self = static_cast<runner*>(user);
    return self->abort_countdown_ > 0 && --self->abort_countdown_ == 0;
  }

  std::string where() const {
    return "seed " + std::to_string(seed_) + ", operation " + std::to_string(op_) + " (" + what_ +
           ")";
  }
  void expect_ok(const status& st, const char* what) {
    what_ = what;
    ASSERT_TRUE(st.is_ok()) << where() << ": " << st.to_string();
  }

  std::vector<std::uint8_t> bytes() {
    std::vector<std::uint8_t> out;
    const status st = ctx_->state_write(-1, out);
    EXPECT_TRUE(st.is_ok()) << where() << ": state_write: " << st.to_string();
    return out;
  }
  /// A refused or failed call: the state bytes are those of before and no logits remain.
  void expect_unchanged(const std::vector<std::uint8_t>& before, const status& st) {
    const std::vector<std::uint8_t> after = bytes();
    ASSERT_EQ(before.size(), after.size())
        << where() << " changed the state size after " << st.to_string();
    // The first differing byte after the header (whose checksum differs with it).
    const std::size_t from = std::min<std::size_t>(before.size(), k_header_bytes);
    const auto d = std::mismatch(before.begin() + from, before.end(), after.begin() + from);
    ASSERT_TRUE(d.first == before.end() && before == after)
        << where() << " changed state byte " << (d.first - before.begin()) << " of "
        << before.size() << " after " << st.to_string() << "\n"
        << words_around(before, after, static_cast<std::size_t>(d.first - before.begin()));
  }
  /// The u32 words of both states around byte `at`, to locate a difference.
  static std::string words_around(const std::vector<std::uint8_t>& a,
                                  const std::vector<std::uint8_t>& b, std::size_t at) {
    const std::size_t from = at / 4 * 4 >= 64 ? at / 4 * 4 - 64 : 0;
    std::string out = "u32 words from byte " + std::to_string(from) + ", before/after:";
    for (std::size_t w = from; w + 4 <= a.size() && w + 4 <= b.size() && w < at + 64; w += 4) {
      std::uint32_t x = 0, y = 0;
      std::memcpy(&x, a.data() + w, 4);
      std::memcpy(&y, b.data() + w, 4);
      char word[32];
      std::snprintf(word, sizeof word, " %u/%u", x, y);
      out += word;
    }
    return out;
  }

  /// A refusal the strategy documents for this operation.
  void expect_refusal(const std::vector<std::uint8_t>& before, const status& st, const char* op) {
    ASSERT_TRUE(Kind::may_refuse(op, st.code()))
        << where() << ": refused unexpectedly: " << st.to_string();
    ++t_.refused;
    expect_unchanged(before, st);
  }

  void check_positions() {
    for (seq_id s = 0; s < k_seqs; ++s) {
      const auto n = static_cast<pos_t>(h_.tokens[s].size());
      ASSERT_EQ(ctx_->seq_pos_max(s), n == 0 ? -1 : h_.base[s] + n - 1)
          << where() << ": sequence " << s;
    }
  }

  token_id random_token() {
    return static_cast<token_id>(rng_.range(Kind::k_first_token, m_->n_vocab() - 1));
  }

  /// Logits of the last of `t` decoded from position 0 in the reference context.
  std::vector<float> reference(std::span<const token_id> t) {
    ref_->clear();
    batch b;
    for (std::size_t i = 0; i < t.size(); ++i)
      b.add(t[i], static_cast<pos_t>(i), {0}, i + 1 == t.size());
    const status st = ref_->decode(b);
    EXPECT_TRUE(st.is_ok()) << where() << ": reference: " << st.to_string();
    const auto row = ref_->logits_ith(-1);
    return {row.begin(), row.end()};
  }

  void compare(std::span<const float> got, std::span<const token_id> t, seq_id s) {
    const std::vector<float> want = reference(t);
    ASSERT_EQ(got.size(), want.size()) << where() << ": sequence " << s;
    float top = 1.0f;
    for (float v : want) top = std::max(top, std::fabs(v));
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - want[i]), 1e-4f * top)
          << where() << ": sequence " << s << " after " << t.size() << " tokens, column " << i
          << ": " << got[i] << " vs the reference's " << want[i];
    ++t_.compared;
  }

  void decode(fault f) {
    what_ = f == fault::none    ? "decode"
            : f == fault::apply ? "decode, apply fails"
                                : "decode, abort";
    batch b;
    struct part {
      seq_id s;
      std::vector<token_id> t;
      std::vector<std::int32_t> rows;  // batch index of each token that outputs, or -1
    };
    std::vector<part> parts;
    const int n_parts = static_cast<int>(rng_.range(1, 3));
    for (int k = 0; k < n_parts; ++k) {
      const seq_id s = static_cast<seq_id>(rng_.range(0, k_seqs - 1));
      if (std::any_of(parts.begin(), parts.end(), [s](const part& p) { return p.s == s; }))
        continue;
      const std::size_t n = rng_.range(1, 10);
      if (h_.tokens[s].size() + n > k_max_len) {
        expect_ok(ctx_->seq_rm(s, -1, -1), "seq_rm of a long sequence");
        h_.clear(s);
        what_ = "decode";
      }
      part p{s, {}, {}};
      for (std::size_t i = 0; i < n; ++i) p.t.push_back(random_token());
      parts.push_back(std::move(p));
    }
    for (part& p : parts) {
      const pos_t p0 = h_.base[p.s] + static_cast<pos_t>(h_.tokens[p.s].size());
      for (std::size_t i = 0; i < p.t.size(); ++i) {
        const bool out = i + 1 == p.t.size() || rng_.range(0, 5) == 0;
        p.rows.push_back(out ? static_cast<std::int32_t>(b.size()) : -1);
        b.add(p.t[i], p0 + static_cast<pos_t>(i), {p.s}, out);
      }
    }
    const std::vector<std::uint8_t> before = bytes();
    ctx_->memory().fail_apply_at = f == fault::apply ? static_cast<int>(rng_.range(0, 2)) : -1;
    abort_countdown_ = f == fault::abort ? static_cast<int>(rng_.range(1, 12)) : 0;
    const status st = ctx_->decode(b);
    ctx_->memory().fail_apply_at = -1;
    abort_countdown_ = 0;
    if (!st && Kind::may_refuse("decode", st.code())) return expect_refusal(before, st, "decode");
    if (!st) {
      ASSERT_NE(f, fault::none) << where() << ": " << st.to_string();
      ASSERT_EQ(st.code(), f == fault::apply ? status_code::no_space : status_code::aborted)
          << where() << ": " << st.to_string();
      ++t_.failed_decodes;
      ASSERT_EQ(ctx_->n_outputs(), 0u) << where();
      expect_unchanged(before, st);
      return;
    }
    ++t_.decodes;
    for (part& p : parts) {
      std::vector<token_id>& h = h_.tokens[p.s];
      for (std::size_t i = 0; i < p.t.size(); ++i) {
        h.push_back(p.t[i]);
        if (p.rows[i] >= 0 && (i + 1 == p.t.size() || rng_.range(0, 3) == 0)) {
          compare(ctx_->logits_ith(p.rows[i]), h, p.s);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }

  void rm_suffix(seq_id s) {
    what_ = "seq_rm suffix";
    const std::size_t n = h_.tokens[s].size();
    if (n < 2) return;
    const std::size_t k = rng_.range(1, n - 1);
    const std::vector<std::uint8_t> before = bytes();
    const status st = ctx_->seq_rm(s, h_.base[s] + static_cast<pos_t>(k), -1);
    if (!st) return expect_refusal(before, st, "seq_rm");
    h_.tokens[s].resize(k);
    ++t_.rm_suffix;
  }

  void copy(seq_id src, seq_id dst) {
    expect_ok(ctx_->seq_rm(dst, -1, -1), "seq_rm before seq_cp");
    h_.clear(dst);
    what_ = "seq_cp";
    const std::size_t n = h_.tokens[src].size();
    if (n == 0) return;
    const std::size_t k = rng_.range(1, n);
    const std::vector<std::uint8_t> before = bytes();
    const status st = ctx_->seq_cp(src, dst, -1, h_.base[src] + static_cast<pos_t>(k));
    if (!st) return expect_refusal(before, st, "seq_cp");
    h_.tokens[dst].assign(h_.tokens[src].begin(), h_.tokens[src].begin() + k);
    h_.base[dst] = h_.base[src];
    ++t_.copies;
  }

  void keep(seq_id s) {
    expect_ok(ctx_->seq_keep(s), "seq_keep");
    for (seq_id o = 0; o < k_seqs; ++o)
      if (o != s) h_.clear(o);
  }

  void shift(seq_id s) {
    what_ = "seq_add";
    if (h_.tokens[s].empty()) return;
    const pos_t delta = static_cast<pos_t>(rng_.range(0, h_.base[s] + 8)) - h_.base[s];
    const std::vector<std::uint8_t> before = bytes();
    const status st = ctx_->seq_add(s, -1, -1, delta);
    if (!st) return expect_refusal(before, st, "seq_add");
    h_.base[s] += delta;
    ++t_.shifts;
  }

  struct saved_state {
    seq_id s;
    std::vector<std::uint8_t> data;
    history h;
  };

  void save(seq_id s) {
    saved_state sv{s, {}, h_};
    expect_ok(ctx_->state_write(s, sv.data), s < 0 ? "state_write" : "state_write of a sequence");
    (s < 0 ? saved_all_ : saved_seq_) = std::move(sv);
  }

  void load(seq_id dest) {
    const std::optional<saved_state>& sv = dest < 0 ? saved_all_ : saved_seq_;
    what_ = dest < 0 ? "state_read" : "state_read of a sequence";
    if (!sv) return;
    const std::vector<std::uint8_t> before = bytes();
    const status st = ctx_->state_read(sv->data, dest);
    if (!st) return expect_refusal(before, st, "state_read");
    if (dest < 0) {
      h_ = sv->h;
    } else {
      h_.tokens[dest] = sv->h.tokens[sv->s];
      h_.base[dest] = sv->h.base[sv->s];
    }
    ++t_.loads;
  }

  void bad_write(seq_id s) {
    what_ = "state_write failing";
    const std::vector<std::uint8_t> before = bytes();
    ctx_->memory().fail_write_after = rng_.range(0, before.size());
    std::vector<std::uint8_t> out;
    const status st = ctx_->state_write(s, out);
    ctx_->memory().fail_write_after.reset();
    ASSERT_EQ(st.code(), status_code::io_error) << where() << ": " << st.to_string();
    ++t_.bad_writes;
    // The logits of the last decode stay; the state must not change.
    const std::vector<std::uint8_t> after = bytes();
    ASSERT_TRUE(before == after) << where() << " changed the state";
  }

  /// A damaged file: truncated, or one bit flipped. Refused, nothing changed.
  void bad_read(seq_id dest) {
    what_ = "state_read of a damaged file";
    std::vector<std::uint8_t> data;
    expect_ok(
        ctx_->state_write(dest < 0 ? -1 : static_cast<seq_id>(rng_.range(0, k_seqs - 1)), data),
        "state_write before a damaged read");
    what_ = "state_read of a damaged file";
    if (rng_.range(0, 1) == 0)
      data.resize(rng_.range(0, data.size() - 1));
    else
      data[rng_.range(0, data.size() - 1)] ^= static_cast<std::uint8_t>(1u << rng_.range(0, 7));
    const std::vector<std::uint8_t> before = bytes();
    const status st = ctx_->state_read(data, dest);
    ASSERT_FALSE(st.is_ok()) << where() << ": a damaged state file was accepted";
    ++t_.bad_reads;
    expect_unchanged(before, st);
  }

  const model_t* m_;
  splitmix64 rng_;
  std::uint64_t seed_;
  std::optional<ctx_t> ctx_;
  std::optional<ref_t> ref_;
  history h_;
  std::optional<saved_state> saved_all_, saved_seq_;
  tally t_;
  int op_ = 0;
  int abort_countdown_ = 0;
  std::string what_;
};

/// Operations per test: thousands in release, a tenth under the sanitizers.
inline const int k_ops = static_cast<int>(mnemo_test::scaled_count(2000, 10));

/// Runs seeds of 500 operations until k_ops ran; checks that every kind of operation succeeded
/// at least once (a strategy that refuses everything would pass vacuously).
/// A Kind may run fewer (k_ops_share: 2 = half) to stay within a ctest's time budget.
template <class Kind>
void run_kind(const typename Kind::model_t& m) {
  tally sum;
  int share = 1;
  if constexpr (requires { Kind::k_ops_share; }) share = Kind::k_ops_share;
  const int n_ops = std::max(1, k_ops / share), per_seed = std::min(n_ops, 500);
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(n_ops / per_seed); ++seed) {
    runner<Kind> r(m, seed);
    r.run(per_seed);
    if (::testing::Test::HasFailure()) return;
    const tally& t = r.counts();
    for (auto [a, b] : {std::pair{&sum.decodes, t.decodes},
                        {&sum.compared, t.compared},
                        {&sum.failed_decodes, t.failed_decodes},
                        {&sum.rm_suffix, t.rm_suffix},
                        {&sum.copies, t.copies},
                        {&sum.shifts, t.shifts},
                        {&sum.loads, t.loads},
                        {&sum.refused, t.refused},
                        {&sum.bad_reads, t.bad_reads},
                        {&sum.bad_writes, t.bad_writes}})
      *a += b;
  }
  EXPECT_GT(sum.compared, 0);
  EXPECT_GT(sum.failed_decodes, 0);
  // The shortened sanitizer runs (a hundred operations or so) need not draw every kind;
  // the full-size release runs must.
  if (n_ops < 500) return;
  EXPECT_GT(sum.rm_suffix, 0);
  EXPECT_GT(sum.copies, 0);
  EXPECT_GT(sum.loads, 0);
  EXPECT_GT(sum.bad_reads, 0);
  EXPECT_GT(sum.bad_writes, 0);
  if (Kind::k_shifts) {
    EXPECT_GT(sum.shifts, 0);
  }
  std::printf(
      "%d decodes (%d rows compared), %d failed decodes, %d suffix removals, %d copies, "
      "%d shifts, %d loads, %d refusals, %d damaged reads, %d failed writes\n",
      sum.decodes, sum.compared, sum.failed_decodes, sum.rm_suffix, sum.copies, sum.shifts,
      sum.loads, sum.refused, sum.bad_reads, sum.bad_writes);
}

}  // namespace mnemo_test::ctx_model
