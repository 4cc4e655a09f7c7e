// Recurrent and hybrid models through mnemo::context, on the fixture models (mamba on
// memory::recurrent; jamba on layered<full_cache, recurrent>):
//  - state save / load / resume: decode half, save, load into a fresh context, decode
//    the rest: the same logits, bit for bit, as decoding straight through;
//  - rollback: a failure injected in micro-batch 1 after micro-batch 0 was applied
//    leaves the whole memory state byte-identical, and the context usable;
//  - the rollback of a speculative draft through token snapshots (also with jamba's
//    attention layers on split_stream): state bytes equal to a context that never
//    decoded the draft, checked per sequence and whole;
//  - a randomized model-based test: random multi-sequence decodes (small micro-batches,
//    injected failures), suffix removals through checkpoints, copies, keeps and clears,
//    checked against a reference that holds only each sequence's token history: the
//    logits of a sequence's last token must equal (to 1e-4 * max|logit|) those of a
//    fresh context decoding that history in one call, and a refused or failed
//    operation must leave the state bytes unchanged.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/rng.hpp"
#include "mnemo/context.hpp"
#include "mnemo/memory/full/full_cache.hpp"
#include "mnemo/memory/layered/layered.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/recurrent/recurrent.hpp"
#include "mnemo/memory/recurrent/recurrent_state.hpp"
#include "mnemo/memory/stream/split_stream.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

namespace {

using namespace mnemo;

std::string fixture(const std::string& name) {
  return std::string(MNEMO_FIXTURES_DIR) + "/" + name;
}

/// A model that runs the real forward pass and then fails at micro-batch fail_at, so
/// the memory holds changed bytes when the context rolls back.
template <class M>
struct failing_model {
  using workspace = typename M::workspace;
  const M* m = nullptr;
  mutable int fail_at = -1;

  std::uint32_t n_vocab() const { return m->n_vocab(); }
  std::uint32_t n_embd() const { return m->n_embd(); }
  result<workspace> make_workspace(std::uint32_t n) const { return m->make_workspace(n); }
  template <simd::isa_tag Isa = simd::native, class Memory>
  status forward(Memory& mem, std::size_t u, const ubatch& ub, workspace& ws, int threads) const {
    MNEMO_RETURN_IF_ERROR(m->template forward<Isa>(mem, u, ub, ws, threads));
    if (static_cast<int>(u) == fail_at)
      return make_status(status_code::internal, "injected failure in micro-batch %zu", u);
    return {};
  }
};

struct mamba_kind {
  using model_t = model::mamba_model;
  using memory_t = memory::recurrent;
  static constexpr const char* file = "mamba.gguf";
  static result<memory_t> make_memory(const model_t& m, std::size_t n_ckpt, std::size_t n_snap) {
    memory::recurrent_config c = m.recurrent_config(4, n_ckpt);
    c.n_token_snapshots = n_snap;
    return memory::recurrent::make(c);
  }
};

struct jamba_kind {
  using model_t = model::jamba_model;
  using memory_t = memory::layered<memory::full_cache<float>, memory::recurrent>;
  static constexpr const char* file = "jamba.gguf";
  static result<memory_t> make_memory(const model_t& m, std::size_t n_ckpt, std::size_t n_snap) {
    MNEMO_ASSIGN_OR_RETURN(auto kv, memory::full_cache<float>::make(m.full_cache_config(512, 4)));
    memory::recurrent_config c = m.recurrent_config(4, n_ckpt);
    c.n_token_snapshots = n_snap;
    MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(c));
    return memory_t::make(m.layer_parts(0, 1), std::move(kv), std::move(rec));
  }
};

struct jamba_split_kind {
  using model_t = model::jamba_model;
  using memory_t = memory::layered<memory::split_stream<float>, memory::recurrent>;
  static constexpr const char* file = "jamba.gguf";
  static result<memory_t> make_memory(const model_t& m, std::size_t n_ckpt, std::size_t n_snap) {
    MNEMO_ASSIGN_OR_RETURN(auto kv,
                           memory::split_stream<float>::make(m.split_stream_config(128, 4)));
    memory::recurrent_config c = m.recurrent_config(4, n_ckpt);
    c.n_token_snapshots = n_snap;
    MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(c));
    return memory_t::make(m.layer_parts(0, 1), std::move(kv), std::move(rec));
  }
};

template <class Kind>
const typename Kind::model_t* load() {
  static std::unique_ptr<typename Kind::model_t> m = [] {
    auto r = Kind::model_t::open(fixture(Kind::file));
    return r.is_ok() ? std::make_unique<typename Kind::model_t>(std::move(r).value()) : nullptr;
  }();
  return m.get();
}

template <class Kind>
class RecurrentModel : public ::testing::Test {
 protected:
  using model_t = typename Kind::model_t;
  using memory_t = typename Kind::memory_t;
  using ctx_t = context<failing_model<model_t>, memory_t>;

  void SetUp() override {
    if (!std::filesystem::exists(fixture(Kind::file))) GTEST_SKIP() << "no fixtures";
    model_ = load<Kind>();
    ASSERT_NE(model_, nullptr);
    wrap_.m = model_;
  }

  ctx_t make_ctx(std::uint32_t n_ubatch, std::size_t n_ckpt = 0, std::size_t n_snap = 0) {
    auto mem = Kind::make_memory(*model_, n_ckpt, n_snap);
    EXPECT_TRUE(mem.is_ok()) << mem.error().to_string();
    context_params p;
    p.n_ubatch = n_ubatch;
    p.n_seq_max = 4;
    p.n_threads = 2;
    auto c = ctx_t::make(wrap_, std::move(mem).value(), p);
    EXPECT_TRUE(c.is_ok());
    return std::move(c).value();
  }

  static std::vector<std::uint8_t> bytes(ctx_t& c) {
    std::vector<std::uint8_t> out;
    EXPECT_TRUE(c.state_write(-1, out).is_ok());
    return out;
  }

  static token_id token_at(seq_id s, pos_t p) { return 3 + (p * 37 + s * 101) % 509; }

  /// Logits of the last token after decoding `hist` as sequence 0 in one call of a
  /// fresh context (the reference path: one micro-batch, chunked scan).
  std::vector<float> reference(const std::vector<token_id>& hist) {
    auto c = make_ctx(512);
    batch b;
    for (std::size_t p = 0; p < hist.size(); ++p)
      b.add(hist[p], static_cast<pos_t>(p), {0}, p + 1 == hist.size());
    EXPECT_TRUE(c.decode(b).is_ok());
    const auto row = c.logits_ith(-1);
    return {row.begin(), row.end()};
  }

  const model_t* model_ = nullptr;
  failing_model<model_t> wrap_;
};

using kinds = ::testing::Types<mamba_kind, jamba_kind>;
TYPED_TEST_SUITE(RecurrentModel, kinds);

/// The rollback of a draft also runs with jamba's attention layers on split streams.
template <class Kind>
class TokenSnapshotRollback : public RecurrentModel<Kind> {};
using rollback_kinds = ::testing::Types<mamba_kind, jamba_kind, jamba_split_kind>;
TYPED_TEST_SUITE(TokenSnapshotRollback, rollback_kinds);

TYPED_TEST(RecurrentModel, SaveLoadResumeGivesIdenticalLogits) {
  // Two sequences so the state holds more than one slot; calls of 20 tokens each.
  auto decode_range = [](auto& c, pos_t p0, pos_t p1, std::vector<float>& out) {
    batch b;
    for (seq_id s = 0; s < 2; ++s)
      for (pos_t p = p0; p < p1; ++p) b.add(TestFixture::token_at(s, p), p, {s}, true);
    ASSERT_TRUE(c.decode(b).is_ok());
    const auto l = c.logits();
    out.insert(out.end(), l.begin(), l.end());
  };
  std::vector<float> straight, resumed;
  auto a = this->make_ctx(16);
  decode_range(a, 0, 20, straight);
  decode_range(a, 20, 40, straight);

  auto b = this->make_ctx(16);
  decode_range(b, 0, 20, resumed);
  const std::vector<std::uint8_t> saved = this->bytes(b);
  auto c = this->make_ctx(16);
  ASSERT_TRUE(c.state_read(saved).is_ok());
  EXPECT_EQ(c.seq_pos_max(0), 19);
  EXPECT_EQ(c.seq_pos_max(1), 19);
  decode_range(c, 20, 40, resumed);
  ASSERT_EQ(straight.size(), resumed.size());
  for (std::size_t i = 0; i < straight.size(); ++i)
    ASSERT_EQ(straight[i], resumed[i])
        << "value " << i << " (row " << i / this->model_->n_vocab() << ")";

  // A per-sequence state moves sequence 1 into sequence 3 of another context.
  std::vector<std::uint8_t> one;
  ASSERT_TRUE(b.state_write(1, one).is_ok());
  auto d = this->make_ctx(16);
  ASSERT_TRUE(d.state_read(one, 3).is_ok());
  EXPECT_EQ(d.seq_pos_max(3), 19);
  EXPECT_EQ(d.seq_pos_max(1), -1);
}

TYPED_TEST(RecurrentModel, FailureInSecondMicroBatchRestoresEveryByte) {
  auto c = this->make_ctx(8);
  batch warm;
  for (seq_id s = 0; s < 3; ++s)
    for (pos_t p = 0; p < 5; ++p) warm.add(TestFixture::token_at(s, p), p, {s}, p == 4);
  ASSERT_TRUE(c.decode(warm).is_ok());
  const std::vector<std::uint8_t> before = this->bytes(c);

  // 3 sequences x 6 tokens with n_ubatch 8: equal split gives micro-batches of 2 tokens
  // per sequence; micro-batch 0 is applied and computed, 1 fails after computing.
  batch b;
  for (seq_id s = 0; s < 3; ++s)
    for (pos_t p = 5; p < 11; ++p) b.add(TestFixture::token_at(s, p), p, {s}, true);
  this->wrap_.fail_at = 1;
  const status st = c.decode(b);
  this->wrap_.fail_at = -1;
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("injected"), std::string::npos) << st.to_string();
  EXPECT_EQ(c.n_outputs(), 0u);
  const std::vector<std::uint8_t> after = this->bytes(c);
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t i = 0; i < before.size(); ++i)
    ASSERT_EQ(before[i], after[i]) << "state byte " << i << " of " << before.size();
  for (seq_id s = 0; s < 3; ++s) EXPECT_EQ(c.seq_pos_max(s), 4);

  // The same batch now succeeds and matches a context that never failed.
  ASSERT_TRUE(c.decode(b).is_ok());
  auto ok = this->make_ctx(8);
  ASSERT_TRUE(ok.decode(warm).is_ok());
  ASSERT_TRUE(ok.decode(b).is_ok());
  const auto x = c.logits(), y = ok.logits();
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "value " << i;
}

/// "" when two state files are equal, else where they first differ: in a composite's
/// file, in which part; then the header, or the payload byte and its u32 word in each
/// (the header's checksum differs with any payload byte, so it is not the place).
std::string first_difference(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (std::ranges::equal(a, b)) return "";
  constexpr std::size_t H = memory::state_header::bytes;
  auto u32_at = [](std::span<const std::uint8_t> v, std::size_t at) {
    std::uint32_t w = 0;
    for (std::size_t k = at; k < std::min(v.size(), at + 4); ++k)
      w |= std::uint32_t{v[k]} << (8 * (k - at));
    return w;
  };
  char buf[200];
  constexpr auto composite = static_cast<std::uint32_t>(memory::strategy_id::composite);
  if (a.size() > H + 4 && b.size() > H + 4 && (u32_at(a, 4) >> 16) == composite &&
      (u32_at(b, 4) >> 16) == composite) {
    std::size_t at = H + 4;  // composite payload: u32 parts, per part u64 bytes + its file
    auto u64_at = [&](std::span<const std::uint8_t> v) {
      return u32_at(v, at) | std::uint64_t{u32_at(v, at + 4)} << 32;
    };
    for (std::uint32_t k = 0; k < u32_at(a, H) && at + 8 <= std::min(a.size(), b.size()); ++k) {
      const std::uint64_t na = u64_at(a), nb = u64_at(b);
      if (na > a.size() - at - 8 || nb > b.size() - at - 8) break;
      const char* name =
          memory::strategy_name(static_cast<std::uint16_t>(u32_at(a, at + 12) >> 16));
      std::string in = na != nb ? "sizes differ"
                                : first_difference(a.subspan(at + 8, na), b.subspan(at + 8, nb));
      if (!in.empty()) {
        std::snprintf(buf, sizeof buf, "part %u (%s): ", k, name ? name : "?");
        return buf + in;
      }
      at += 8 + na;
    }
  }
  const auto d = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  std::size_t i = static_cast<std::size_t>(d.first - a.begin());
  // Only the checksum differs in the header: the difference is in the payload.
  if (i >= H - 8 && i < H && a.size() == b.size() && a.size() > H)
    i = static_cast<std::size_t>(std::mismatch(a.begin() + H, a.end(), b.begin() + H).first -
                                 a.begin());
  if (i < H)
    std::snprintf(buf, sizeof buf, "header byte %zu; sizes %zu and %zu", i, a.size(), b.size());
  else
    std::snprintf(buf, sizeof buf, "payload byte %zu (u32 word %08x vs %08x); sizes %zu and %zu",
                  i - H, u32_at(a, i / 4 * 4), u32_at(b, i / 4 * 4), a.size(), b.size());
  return buf;
}

/// Decodes `t` as sequence s from position p0, outputs on every token.
template <class Ctx>
status decode_tokens(Ctx& c, seq_id s, pos_t p0, std::span<const token_id> t) {
  batch b;
  for (std::size_t i = 0; i < t.size(); ++i) b.add(t[i], p0 + static_cast<pos_t>(i), {s}, true);
  return c.decode(b);
}

TYPED_TEST(TokenSnapshotRollback, ToAnyTokenOfTheLastMicroBatch) {
  // Sequences 0 and 1: a 6-token prompt each (two calls), then an 8-token draft each in
  // one micro-batch. With 8 token snapshots, seq_rm(s, p, -1) for every p in [6, 14), one
  // after another from 13 down, must give exactly the state bytes of
  //  - a context that jumped from 14 to p in one removal (the snapshot of token p - 1 as
  //    the micro-batch computed it; decoding only tokens 6 .. p - 1 multiplies fewer rows
  //    at once, which may round differently), and, for p = 6,
  //  - a context without snapshots that decoded only the two prompts the same way: per
  //    sequence and, once both sequences are back at 6, as a whole (cells, positions,
  //    owners, K/V rows, recurrent slots); decoding on from there gives its logits bit
  //    for bit.
  // The reference holds both prompts, not only s's: a sequence's K/V rows depend in their
  // last bits on the cells it lies in (the attention kernel's softmax takes a block's
  // full vectors with the vector exp and lane sums, the rest with std::exp one by one),
  // so on a unified cache sequence 1's prompt in cells 6..11 rounds differently from the
  // same prompt in cells 0..5 in every state computed from the first attention layer's
  // output.
  // From the deepest point, decoding on must give the logits of a context without
  // snapshots that decoded only the kept tokens (within 1e-4 * max|logit|). p = 5 (before
  // the micro-batch) is refused and changes nothing; with 3 snapshots only p in [11, 14).
  std::vector<token_id> t(16);
  for (pos_t p = 0; p < 16; ++p) t[p] = TestFixture::token_at(0, p);
  const std::span<const token_id> all(t);
  auto state_of = [](auto& c, seq_id s) {
    std::vector<std::uint8_t> out;
    EXPECT_TRUE(c.state_write(s, out).is_ok());
    return out;
  };
  auto prompts = this->make_ctx(16);
  for (seq_id s = 0; s < 2; ++s) ASSERT_TRUE(decode_tokens(prompts, s, 0, all.first(6)).is_ok());
  for (const std::size_t n_snap : {std::size_t{8}, std::size_t{3}}) {
    auto drafted = [&] {
      auto c = this->make_ctx(16, 0, n_snap);
      for (seq_id s = 0; s < 2; ++s) EXPECT_TRUE(decode_tokens(c, s, 0, all.first(6)).is_ok());
      batch b;
      for (seq_id s = 0; s < 2; ++s)
        for (pos_t p = 6; p < 14; ++p) b.add(t[p], p, {s}, true);
      EXPECT_TRUE(c.decode(b).is_ok());
      return c;
    };
    auto c = drafted();
    const pos_t lowest = n_snap == 8 ? 6 : 11;
    for (seq_id s = 0; s < 2; ++s) {
      for (pos_t p = 13; p >= 5; --p) {
        SCOPED_TRACE(::testing::Message() << n_snap << " snapshots, sequence " << s << ", p " << p);
        const std::vector<std::uint8_t> before = state_of(c, -1);
        const status st = c.seq_rm(s, p, -1);
        if (p < lowest) {
          ASSERT_EQ(st.code(), status_code::unsupported) << st.to_string();
          EXPECT_NE(st.to_string().find("cannot roll back to position"), std::string::npos)
              << st.to_string();
          EXPECT_TRUE(before == state_of(c, -1)) << "a refused rollback changed the state";
          continue;
        }
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_EQ(c.seq_pos_max(s), p - 1);
        auto jump = drafted();
        ASSERT_TRUE(jump.seq_rm(s, p, -1).is_ok());
        ASSERT_EQ(first_difference(state_of(c, s), state_of(jump, s)), "")
            << "stepwise and direct rollbacks to " << p << " differ";
        if (p == 6) {
          ASSERT_EQ(first_difference(state_of(c, s), state_of(prompts, s)), "")
              << "the restored sequence differs from decoding only the prompts";
          ASSERT_TRUE(jump.seq_rm(1 - s, 6, -1).is_ok());
          ASSERT_EQ(first_difference(state_of(jump, -1), state_of(prompts, -1)), "")
              << "the restored memory differs from decoding only the prompts";
          // Decoding on gives the bits of a context that never drafted: the freed cells
          // are taken first again, so the next tokens lie where they would have.
          auto twin = this->make_ctx(16);
          for (seq_id o = 0; o < 2; ++o)
            ASSERT_TRUE(decode_tokens(twin, o, 0, all.first(6)).is_ok());
          ASSERT_TRUE(decode_tokens(jump, s, 6, all.subspan(6, 2)).is_ok());
          ASSERT_TRUE(decode_tokens(twin, s, 6, all.subspan(6, 2)).is_ok());
          const auto a = jump.logits(), r = twin.logits();
          ASSERT_EQ(a.size(), r.size());
          for (std::size_t i = 0; i < a.size(); ++i)
            ASSERT_EQ(a[i], r[i]) << "value " << i << " after a rollback to 6 and two tokens";
          ASSERT_EQ(first_difference(state_of(jump, -1), state_of(twin, -1)), "");
        }
      }
      const pos_t at = c.seq_pos_max(s) + 1;
      ASSERT_TRUE(decode_tokens(c, s, at, all.subspan(at, 2)).is_ok());
      auto ref = this->make_ctx(16);
      ASSERT_TRUE(decode_tokens(ref, s, 0, all.first(static_cast<std::size_t>(at) + 2)).is_ok());
      const auto a = c.logits_ith(-1), r = ref.logits_ith(-1);
      ASSERT_EQ(a.size(), r.size());
      float top = 1;
      for (float v : r) top = std::max(top, std::fabs(v));
      for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_LE(std::fabs(a[i] - r[i]), 1e-4f * top)
            << "column " << i << " after a rollback to " << at << " and two more tokens";
    }
  }
}

TYPED_TEST(RecurrentModel, RandomizedAgainstTokenHistories) {
  const std::uint64_t seed = 20240611;
  splitmix64 g{seed};
  auto c = this->make_ctx(4, /*n_ckpt=*/6);
  std::vector<std::vector<token_id>> hist(4);
  const std::size_t nv = this->model_->n_vocab();
  int decodes = 0, failures = 0, refusals = 0, checks = 0, restores = 0;
  // Full length in every build: fewer steps reach no checkpoint restore (asserted below).
  for (int step = 0; step < 120; ++step) {
    const std::string where = "seed " + std::to_string(seed) + ", step " + std::to_string(step);
    const int op = static_cast<int>(g.range(0, 9));
    const std::vector<std::uint8_t> before = this->bytes(c);
    status st;
    bool expect_unchanged = false;
    if (op <= 5) {  // decode 1..4 sequences, 1..5 tokens each; sometimes fail
      batch b;
      std::vector<std::pair<seq_id, std::vector<token_id>>> added;
      for (seq_id s = 0; s < 4; ++s) {
        if (g.range(0, 1) == 0 || hist[s].size() > 40) continue;
        const auto n = static_cast<pos_t>(g.range(1, 5));
        std::vector<token_id> t;
        for (pos_t k = 0; k < n; ++k) {
          const auto p = static_cast<pos_t>(hist[s].size()) + k;
          t.push_back(static_cast<token_id>(3 + g.range(0, 508)));
          b.add(t.back(), p, {s}, k == n - 1);
        }
        added.emplace_back(s, std::move(t));
      }
      if (added.empty()) continue;
      const bool fail = g.range(0, 4) == 0;
      this->wrap_.fail_at = fail ? static_cast<int>(g.range(0, 2)) : -1;
      st = c.decode(b);
      this->wrap_.fail_at = -1;
      if (fail && !st.is_ok()) {
        ++failures;
        expect_unchanged = true;
      } else {
        ASSERT_TRUE(st.is_ok()) << where << ": " << st.to_string();
        ++decodes;
        for (std::size_t i = 0; i < added.size(); ++i) {
          auto& h = hist[added[i].first];
          h.insert(h.end(), added[i].second.begin(), added[i].second.end());
          if (g.range(0, 2) != 0) continue;  // check some of them (each costs a decode)
          const auto ours = c.output_row(static_cast<std::uint32_t>(i));
          const auto ref = this->reference(h);
          float worst = 0, max_logit = 0;
          std::size_t at = 0;
          for (std::size_t j = 0; j < nv; ++j) {
            max_logit = std::max(max_logit, std::fabs(ref[j]));
            const float d = std::fabs(ours[j] - ref[j]);
            if (!(d <= worst)) worst = d, at = j;
          }
          ++checks;
          ASSERT_LE(worst, 1e-4f * max_logit)
              << where << ": sequence " << added[i].first << " at " << h.size()
              << " tokens, column " << at << ": ours " << ours[at] << ", reference " << ref[at];
        }
      }
    } else if (op == 6) {  // remove a suffix (restorable only at a checkpoint)
      const seq_id s = static_cast<seq_id>(g.range(0, 3));
      if (hist[s].empty()) continue;
      const auto p0 = static_cast<pos_t>(g.range(0, static_cast<std::int64_t>(hist[s].size())));
      st = c.seq_rm(s, p0, -1);
      if (st.is_ok()) {
        restores += static_cast<std::size_t>(p0) < hist[s].size() && p0 > 0 ? 1 : 0;
        hist[s].resize(static_cast<std::size_t>(p0));
      } else {
        expect_unchanged = true, ++refusals;
      }
    } else if (op == 7) {  // copy a whole sequence into an emptied one
      const seq_id s = static_cast<seq_id>(g.range(0, 3)), d = static_cast<seq_id>(g.range(0, 3));
      if (s != d) {
        ASSERT_TRUE(c.seq_rm(d, -1, -1).is_ok()) << where;
      }
      st = c.seq_cp(s, d, 0, -1);
      ASSERT_TRUE(st.is_ok()) << where << ": " << st.to_string();
      if (s != d) hist[d] = hist[s];
    } else if (op == 8) {  // a prefix removal is refused, nothing changes
      const seq_id s = static_cast<seq_id>(g.range(0, 3));
      if (hist[s].size() < 2) continue;
      st = c.seq_rm(s, 0, 1);
      ASSERT_FALSE(st.is_ok()) << where;
      expect_unchanged = true, ++refusals;
    } else {  // drop a sequence (or keep one)
      const seq_id s = static_cast<seq_id>(g.range(0, 3));
      if (g.range(0, 3) == 0) {
        ASSERT_TRUE(c.seq_keep(s).is_ok()) << where;
        for (seq_id o = 0; o < 4; ++o)
          if (o != s) hist[o].clear();
      } else {
        ASSERT_TRUE(c.seq_rm(s, -1, -1).is_ok()) << where;
        hist[s].clear();
      }
    }
    if (expect_unchanged) {
      const std::vector<std::uint8_t> after = this->bytes(c);
      ASSERT_EQ(before, after) << where << ": a refused or failed operation changed the state ("
                               << st.to_string() << ")";
    }
    for (seq_id s = 0; s < 4; ++s)
      ASSERT_EQ(c.seq_pos_max(s), static_cast<pos_t>(hist[s].size()) - 1)
          << where << ": sequence " << s;
  }
  std::printf(
      "[ measure ] %d decodes, %d injected failures, %d refusals, %d checkpoint restores, %d "
      "logit checks\n",
      decodes, failures, refusals, restores, checks);
  EXPECT_GT(failures, 0);
  EXPECT_GT(restores, 0);
  EXPECT_GT(checks, 5);
}

}  // namespace
