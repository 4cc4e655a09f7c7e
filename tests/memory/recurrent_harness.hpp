// Shared by the recurrent memory tests: a small memory, micro-batches built by hand and
// a toy "model" whose state after a token depends on every earlier token, so a wrong
// restore or a stale state shows in the bytes.
#pragma once

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/memory/recurrent/recurrent.hpp"

namespace mnemo_test {

using namespace mnemo;
using memory::recurrent;

inline memory::recurrent_config small_config(seq_id n_seq, std::size_t n_ckpt = 0,
                                             std::size_t budget = 0) {
  return {.n_layer = 2,
          .conv_floats = 6,
          .ssm_floats = 8,
          .n_seq_max = n_seq,
          .n_checkpoints = n_ckpt,
          .checkpoint_bytes = budget};
}

inline recurrent make_memory(seq_id n_seq, std::size_t n_ckpt = 0, std::size_t budget = 0) {
  auto m = recurrent::make(small_config(n_seq, n_ckpt, budget));
  EXPECT_TRUE(m.is_ok());
  return std::move(*m);
}

/// The toy layer update for one token (token id = its position + 7 * seq tag).
inline void toy_token(float* state, std::size_t n, int token) {
  for (std::size_t i = 0; i < n; ++i)
    state[i] =
        state[i] * 0.75f + static_cast<float>(token % 13) * 0.01f * static_cast<float>(i + 1);
}

/// Tokens [p0, p1] of one sequence as a micro-batch.
struct tokens {
  std::vector<pos_t> pos;
  std::vector<seq_set> sets;
  tokens(seq_id s, pos_t p0, pos_t p1) {
    for (pos_t p = p0; p <= p1; ++p) {
      pos.push_back(p);
      sets.push_back(seq_set::of(s));
    }
  }
  memory::ubatch_tokens view() const { return {pos, sets}; }
};

/// Decodes positions [p0, p1] of s in one micro-batch, running the toy model.
inline status decode(recurrent& m, seq_id s, pos_t p0, pos_t p1, int tag = 0) {
  tokens t(s, p0, p1);
  const memory::ubatch_tokens ub = t.view();
  MNEMO_RETURN_IF_ERROR(m.prepare({&ub, 1}));
  if (status st = m.apply(0, ub); !st) {
    m.rollback();
    return st;
  }
  const auto& cfg = m.config();
  for (std::size_t l = 0; l < cfg.n_layer; ++l) {
    const auto ls = m.layer_state(l, 0, 0);
    for (pos_t p = p0; p <= p1; ++p) {
      toy_token(ls.conv, cfg.conv_floats, p + 7 * tag);
      toy_token(ls.ssm, cfg.ssm_floats, p + 7 * tag);
    }
  }
  m.commit();
  return {};
}

/// The state bytes of s after decoding [0, p] from zero (a reference memory).
inline std::vector<float> reference_state(pos_t p, int tag = 0) {
  recurrent r = make_memory(1);
  EXPECT_TRUE(decode(r, 0, 0, p, tag).is_ok());
  const auto sl = r.slot(0);
  return {sl.begin(), sl.end()};
}

inline std::vector<float> state_of(const recurrent& m, seq_id s) {
  const auto sl = m.slot(s);
  return {sl.begin(), sl.end()};
}

}  // namespace mnemo_test
