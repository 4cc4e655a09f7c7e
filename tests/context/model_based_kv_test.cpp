// The model-based test of mnemo::context (model_based_harness.hpp) on a tiny random
// llama built in memory, for every single-part KV strategy: full_cache, split_stream,
// bounded (a budget above the longest history, so nothing is evicted and the logits
// are a full cache's), and the window strategies (sliding_window, split_window) on a
// model with an 8-token window, whose reference is a full cache masking the same window.
#include <string_view>

#include "context/model_based_harness.hpp"
#include "context/tiny_llama.hpp"

#include "mnemo/evict/streaming_llm.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window_state.hpp"

namespace {

using namespace mnemo;
using mnemo_test::ctx_model::k_max_len;
using mnemo_test::ctx_model::k_seqs;
using mnemo_test::ctx_model::k_ubatch;
using full_t = memory::full_cache<float>;

constexpr pos_t k_window = 8;

const model::llama_model& tiny(bool windowed) {
  static const auto plain = mnemo_test::make_tiny_llama({});
  static const auto window = [] {
    mnemo_test::tiny_llama_spec s;
    s.n_swa = k_window;
    return mnemo_test::make_tiny_llama(s);
  }();
  const auto& m = windowed ? window : plain;
  EXPECT_TRUE(m.is_ok()) << m.error().to_string();
  return *m;
}

/// Every kind's reference: a full cache (masking the model's window, if any).
struct full_reference {
  using model_t = model::llama_model;
  using ref_memory_t = full_t;
  static constexpr token_id k_first_token = 0;
  static result<full_t> make_ref_memory(const model_t& m) {
    return full_t::make(m.full_cache_config(64, 1));
  }
};

struct full_kind : full_reference {
  using memory_t = full_t;
  static constexpr bool k_windowed = false, k_shifts = true;
  static result<memory_t> make_memory(const model_t& m) {
    return full_t::make(m.full_cache_config(k_seqs * k_max_len + k_ubatch, k_seqs));
  }
  static bool may_refuse(std::string_view, status_code) { return false; }
};

struct split_stream_kind : full_reference {
  using memory_t = memory::split_stream<float>;
  static constexpr bool k_windowed = false, k_shifts = true;
  static result<memory_t> make_memory(const model_t& m) {
    return memory_t::make(m.split_stream_config(k_max_len + k_ubatch, k_seqs));
  }
  /// The default block pool can be short when a batch writes into every holder of a
  /// shared block (each takes a private copy while the batch keeps the shared one for
  /// rollback): prepare refuses the batch, nothing changed (docs/split-stream.md).
  static bool may_refuse(std::string_view op, status_code c) {
    return op == "decode" && c == status_code::no_space;
  }
};

struct bounded_kind : full_reference {
  using memory_t = memory::bounded<evict::streaming_llm, float>;
  static constexpr bool k_windowed = false, k_shifts = true;
  static result<memory_t> make_memory(const model_t& m) {
    memory::bounded_config c;
    c.shape = m.kv_shape();
    c.budget = k_max_len + 8;
    c.max_ubatch = k_ubatch;
    c.n_seq_max = k_seqs;
    c.rope = m.hparams().rope();
    return memory_t::make(c);
  }
  static bool may_refuse(std::string_view, status_code) { return false; }
};

/// Window strategies forget: a removal or copy that needs forgotten positions is
/// refused (unsupported), as is loading a sequence where it does not fit.
bool window_refusal(std::string_view op, status_code c) {
  return (c == status_code::unsupported && (op == "seq_rm" || op == "seq_cp")) ||
         (c == status_code::no_space && op == "state_read");
}

struct sliding_window_kind : full_reference {
  using memory_t = memory::sliding_window<float>;
  static constexpr bool k_windowed = true, k_shifts = true;
  static result<memory_t> make_memory(const model_t& m) {
    // Cells for every sequence's window plus a micro-batch, so cells are reused.
    return memory_t::make(m.window_config(256, k_seqs, k_ubatch, k_seqs * k_window + k_ubatch));
  }
  static bool may_refuse(std::string_view op, status_code c) { return window_refusal(op, c); }
};

struct split_window_kind : full_reference {
  using memory_t = memory::split_window<float>;
  static constexpr bool k_windowed = true, k_shifts = true;
  static result<memory_t> make_memory(const model_t& m) {
    memory::split_window_config c;
    c.stream = m.window_config(256, 1, k_ubatch, k_window + k_ubatch);
    c.n_seq_max = k_seqs;
    return memory_t::make(c);
  }
  static bool may_refuse(std::string_view op, status_code c) { return window_refusal(op, c); }
};

template <class Kind>
class ContextModelKv : public ::testing::Test {};
using kinds = ::testing::Types<full_kind, split_stream_kind, bounded_kind, sliding_window_kind,
                               split_window_kind>;
TYPED_TEST_SUITE(ContextModelKv, kinds);

TYPED_TEST(ContextModelKv, RandomOperationsMatchRecomputedHistories) {
  mnemo_test::ctx_model::run_kind<TypeParam>(tiny(TypeParam::k_windowed));
}

}  // namespace
