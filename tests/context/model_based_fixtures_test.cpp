// The model-based test of mnemo::context (model_based_harness.hpp) on the fixture models
// for the composites and the recurrent strategy: gemma2's interleaved window layers on
// layered<full_cache, sliding_window> and layered<split_stream, split_window> (24-token
// window, window cells reused; the reference is a full cache masking the same windows),
// mamba on recurrent and jamba on layered<full_cache, recurrent>, both with token
// snapshots of a micro-batch and a few checkpoints, so suffix removals succeed within
// the last micro-batch (and at checkpoints) and are refused, unchanged, beyond.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "context/model_based_harness.hpp"

#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/recurrent/recurrent_state.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window_state.hpp"
#include "mnemo/model/gemma2.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"

namespace {

using namespace mnemo;
using mnemo_test::ctx_model::k_max_len;
using mnemo_test::ctx_model::k_seqs;
using mnemo_test::ctx_model::k_ubatch;
using full_t = memory::full_cache<float>;

constexpr std::size_t k_window = 24;  // gemma2-iswa's sliding_window

template <class M>
const M* load(const char* file) {
  static std::unique_ptr<M> m = [file] {
    auto r = M::open(std::string(MNEMO_FIXTURES_DIR) + "/" + file);
    return r.is_ok() ? std::make_unique<M>(std::move(r).value()) : nullptr;
  }();
  return m.get();
}

bool window_refusal(std::string_view op, status_code c) {
  return (c == status_code::unsupported && (op == "seq_rm" || op == "seq_cp")) ||
         (c == status_code::no_space && op == "state_read");
}

/// Suffix removals and copies beyond the snapshots and checkpoints are refused.
bool recurrent_refusal(std::string_view op, status_code c) {
  return c == status_code::unsupported && (op == "seq_rm" || op == "seq_cp");
}

struct gemma2_kind {
  using model_t = model::gemma2_model;
  using ref_memory_t = full_t;
  static constexpr const char* file = "gemma2-iswa.gguf";
  static constexpr token_id k_first_token = 0;
  static constexpr bool k_shifts = true;
  static result<full_t> make_ref_memory(const model_t& m) {
    return full_t::make(m.full_cache_config(64, 1));
  }
  static bool may_refuse(std::string_view op, status_code c) { return window_refusal(op, c); }
};

struct iswa_kind : gemma2_kind {
  using memory_t = model_t::iswa_memory<float>;
  static result<memory_t> make_memory(const model_t& m) {
    return m.make_iswa<float>(k_seqs * k_max_len + k_ubatch, k_seqs, k_ubatch,
                              k_seqs * k_window + k_ubatch);
  }
};

struct iswa_split_kind : gemma2_kind {
  using memory_t = model_t::iswa_split_memory<float>;
  /// The global part's default block pool can be short when a batch writes into every
  /// holder of a shared block (each takes a private copy while the batch keeps the
  /// shared one for rollback): prepare refuses the batch, nothing changed.
  static bool may_refuse(std::string_view op, status_code c) {
    return (op == "decode" && c == status_code::no_space) || window_refusal(op, c);
  }
  static result<memory_t> make_memory(const model_t& m) {
    return m.make_iswa_split<float>(k_max_len + k_ubatch, k_seqs, k_ubatch, k_window + k_ubatch);
  }
};

constexpr std::size_t k_checkpoints = 2;

struct mamba_kind {
  using model_t = model::mamba_model;
  using memory_t = memory::recurrent;
  using ref_memory_t = memory::recurrent;
  static constexpr const char* file = "mamba.gguf";
  static constexpr token_id k_first_token = 0;
  static constexpr bool k_shifts = true;
  static result<memory_t> make(const model_t& m, seq_id n_seq, std::size_t snaps) {
    memory::recurrent_config c = m.recurrent_config(n_seq, snaps > 0 ? k_checkpoints : 0);
    c.n_token_snapshots = snaps;
    return memory::recurrent::make(c);
  }
  static result<memory_t> make_memory(const model_t& m) { return make(m, k_seqs, k_ubatch); }
  static result<memory_t> make_ref_memory(const model_t& m) { return make(m, 1, 0); }
  static bool may_refuse(std::string_view op, status_code c) { return recurrent_refusal(op, c); }
};

struct jamba_kind {
  static constexpr int k_ops_share = 2;  // 1000 operations: the slowest model here
  using model_t = model::jamba_model;
  using memory_t = memory::layered<full_t, memory::recurrent>;
  using ref_memory_t = memory_t;
  static constexpr const char* file = "jamba.gguf";
  static constexpr token_id k_first_token = 0;
  static constexpr bool k_shifts = true;
  static result<memory_t> make(const model_t& m, seq_id n_seq, std::size_t snaps) {
    MNEMO_ASSIGN_OR_RETURN(auto kv,
                           full_t::make(m.full_cache_config(n_seq * k_max_len + 64, n_seq)));
    memory::recurrent_config c = m.recurrent_config(n_seq, snaps > 0 ? k_checkpoints : 0);
    c.n_token_snapshots = snaps;
    MNEMO_ASSIGN_OR_RETURN(auto rec, memory::recurrent::make(c));
    return memory_t::make(m.layer_parts(0, 1), std::move(kv), std::move(rec));
  }
  static result<memory_t> make_memory(const model_t& m) { return make(m, k_seqs, k_ubatch); }
  static result<memory_t> make_ref_memory(const model_t& m) { return make(m, 1, 0); }
  static bool may_refuse(std::string_view op, status_code c) { return recurrent_refusal(op, c); }
};

template <class Kind>
class ContextModelFixtures : public ::testing::Test {};
using kinds = ::testing::Types<iswa_kind, iswa_split_kind, mamba_kind, jamba_kind>;
TYPED_TEST_SUITE(ContextModelFixtures, kinds);

TYPED_TEST(ContextModelFixtures, RandomOperationsMatchRecomputedHistories) {
  if (!std::filesystem::exists(std::string(MNEMO_FIXTURES_DIR) + "/" + TypeParam::file))
    GTEST_SKIP() << "no fixtures";
  const auto* m = load<typename TypeParam::model_t>(TypeParam::file);
  ASSERT_NE(m, nullptr);
  mnemo_test::ctx_model::run_kind<TypeParam>(*m);
}

}  // namespace
