// Fuzz targets for the state reader of every memory strategy and composite: full
// cache, sliding window, split streams, split window, bounded (H2O scores travel with
// the cells), recurrent, and the layered composites hybrid (recurrent + full), iSWA
// (full + window) and iSWA over split streams. Each input is a control byte (bits 0-1:
// the destination -1, 0, 1, -1; bit 2: re-seal the file's lengths and checksums so the
// mutation reaches the payload checks) and a state file, read into a small memory that
// already holds two sequences.
//
// What must hold: a refused load has a message, a code that is not `internal`, and
// leaves the memory's whole state byte for byte as it was; an accepted load leaves a
// memory whose state writes and reads back into a fresh memory exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.hpp"

#include "mnemo/evict/h2o.hpp"
#include "mnemo/memory/bounded/bounded_state.hpp"
#include "mnemo/memory/full/full_cache_state.hpp"
#include "mnemo/memory/layered/layered_state.hpp"
#include "mnemo/memory/recurrent/recurrent_state.hpp"
#include "mnemo/memory/session_format.hpp"
#include "mnemo/memory/stream/split_stream_state.hpp"
#include "mnemo/memory/window/sliding_window_state.hpp"
#include "mnemo/memory/window/split_window_state.hpp"

namespace mnemo::fuzz {

namespace state_detail {

using dtype::f16;
inline constexpr seq_id k_n_seq = 2;

inline attention::rope_config rope() {
  attention::rope_config r;
  r.layout = attention::rope_layout::normal;
  r.n_rot = 32;
  return r;
}
inline memory::kv_shape shape(std::size_t layers) { return {layers, 1, 32, 32}; }

inline memory::full_cache<f16> full(std::size_t layers) {
  memory::full_cache_config c;
  c.shape = shape(layers);
  c.size = 16;
  c.n_seq_max = k_n_seq;
  c.rope = rope();
  return std::move(memory::full_cache<f16>::make(c)).value();
}
inline memory::sliding_window_config window_config(std::size_t layers) {
  memory::sliding_window_config c;
  c.shape = shape(layers);
  c.size = 12;
  c.n_ctx = 1 << 20;
  c.n_seq_max = k_n_seq;
  c.n_ubatch = 8;
  c.n_swa = 4;
  c.rope = rope();
  return c;
}
inline memory::sliding_window<f16> window(std::size_t layers) {
  return std::move(memory::sliding_window<f16>::make(window_config(layers))).value();
}
inline memory::split_stream<f16> split(std::size_t layers) {
  memory::split_stream_config c;
  c.shape = shape(layers);
  c.size_per_stream = 16;
  c.n_seq_max = k_n_seq;
  c.block_cells = 4;
  c.rope = rope();
  return std::move(memory::split_stream<f16>::make(c)).value();
}
inline memory::split_window<f16> split_window(std::size_t layers) {
  memory::split_window_config c;
  c.stream = window_config(layers);
  c.n_seq_max = k_n_seq;
  return std::move(memory::split_window<f16>::make(c)).value();
}
using bounded_t = memory::bounded<evict::h2o, f16>;
inline bounded_t bounded() {
  memory::bounded_config c;
  c.shape = shape(2);
  c.budget = 6;
  c.max_ubatch = 8;
  c.n_seq_max = k_n_seq;
  c.rope = rope();
  return std::move(bounded_t::make(c)).value();
}
inline memory::recurrent recurrent(std::size_t layers) {
  memory::recurrent_config c;
  c.n_layer = layers;
  c.conv_floats = 4;
  c.ssm_floats = 4;
  c.n_seq_max = k_n_seq;
  c.n_checkpoints = 2;
  return std::move(memory::recurrent::make(c)).value();
}
using hybrid_t = memory::layered<memory::recurrent, memory::full_cache<f16>>;
using iswa_t = memory::layered<memory::full_cache<f16>, memory::sliding_window<f16>>;
using iswa_split_t = memory::layered<memory::split_stream<f16>, memory::split_window<f16>>;

/// Appends n positions to sequence s as one micro-batch (cell metadata only: the K/V
/// rows stay zero, which is all a state reader sees).
template <class M>
void append(M& m, seq_id s, int n) {
  std::vector<pos_t> pos;
  std::vector<seq_set> sets;
  for (int i = 0; i < n; ++i) {
    pos.push_back(m.seq_pos_max(s) + 1 + i);
    sets.push_back(seq_set::of(s));
  }
  const memory::ubatch_tokens ub{pos, sets};
  if (!m.prepare({&ub, 1})) return;
  if (!m.apply(0, ub)) {
    m.rollback();
    return;
  }
  m.commit();
}

/// A memory with sequence 0 at positions 0..5 and sequence 1 sharing 0..2, then 3..4
/// of its own (where the strategy allows sharing).
template <class M>
M filled(M m) {
  append(m, 0, 6);
  (void)m.seq_cp(0, 1, 0, 3);
  append(m, 1, 2);
  return m;
}

struct full_kind {
  static auto make() { return full(2); }
};
struct window_kind {
  static auto make() { return window(2); }
};
struct split_stream_kind {
  static auto make() { return split(2); }
};
struct split_window_kind {
  static auto make() { return split_window(2); }
};
struct bounded_kind {
  static auto make() { return bounded(); }
};
struct recurrent_kind {
  static auto make() { return recurrent(2); }
};
struct hybrid_kind {
  static auto make() { return std::move(hybrid_t::make({1, 0}, recurrent(1), full(1))).value(); }
};
struct iswa_kind {
  static auto make() { return std::move(iswa_t::make({1, 0, 1}, full(1), window(2))).value(); }
};
struct iswa_split_kind {
  static auto make() {
    return std::move(iswa_split_t::make({1, 0, 1}, split(1), split_window(2))).value();
  }
};

template <class M>
std::vector<std::uint8_t> whole_state(M& m) {
  std::vector<std::uint8_t> out;
  const status st = state_write(m, -1, out);
  return st ? out : std::vector<std::uint8_t>{};
}

}  // namespace state_detail

template <class Kind>
std::string fuzz_state(const std::uint8_t* data, std::size_t size) {
  using namespace state_detail;
  input_cursor in(data, size);
  const std::uint8_t ctl = in.u8();
  const seq_id dest = (ctl & 3) == 1 ? 0 : (ctl & 3) == 2 ? 1 : -1;
  const auto rest = in.rest();
  std::vector<std::uint8_t> blob(rest.begin(), rest.end());
  if (ctl & 4) reseal_state(blob);

  auto m = filled(Kind::make());
  const std::vector<std::uint8_t> before = whole_state(m);
  if (before.empty()) return "the memory's own state could not be written";
  const status st = state_read(m, std::span<const std::uint8_t>(blob), dest);
  ++(st ? outcomes().accepted : outcomes().refused);
  if (!st) {
    if (st.message().empty()) return "refused without a message";
    if (st.code() == status_code::internal) return "internal error: " + st.to_string();
    if (whole_state(m) != before) return "a refused load changed the memory: " + st.to_string();
    return {};
  }
  const std::vector<std::uint8_t> after = whole_state(m);
  if (after.empty()) return "the state written after an accepted load could not be written";
  auto fresh = Kind::make();
  const status back = state_read(fresh, std::span<const std::uint8_t>(after), -1);
  if (!back) return "the state after an accepted load does not load again: " + back.to_string();
  if (whole_state(fresh) != after) return "the state after an accepted load does not round-trip";
  return {};
}

/// Valid files of the memory: the whole state and each sequence's, each with its
/// control byte, sealed and not.
template <class Kind>
std::vector<std::vector<std::uint8_t>> state_seeds() {
  using namespace state_detail;
  auto m = filled(Kind::make());
  std::vector<std::vector<std::uint8_t>> seeds;
  for (const seq_id s : {-1, 0, 1}) {
    std::vector<std::uint8_t> blob;
    if (!state_write(m, s, blob)) continue;
    for (const std::uint8_t reseal : {0, 4}) {
      std::vector<std::uint8_t> in{static_cast<std::uint8_t>((s < 0 ? 0 : s + 1) | reseal)};
      in.insert(in.end(), blob.begin(), blob.end());
      seeds.push_back(std::move(in));
    }
  }
  return seeds;
}

#define MNEMO_FUZZ_STATE_TARGETS(X)        \
  X(state_full, full_kind)                 \
  X(state_window, window_kind)             \
  X(state_split_stream, split_stream_kind) \
  X(state_split_window, split_window_kind) \
  X(state_bounded, bounded_kind)           \
  X(state_recurrent, recurrent_kind)       \
  X(state_hybrid, hybrid_kind)             \
  X(state_iswa, iswa_kind)                 \
  X(state_iswa_split, iswa_split_kind)

#define MNEMO_FUZZ_DEFINE_STATE(name, kind)                       \
  inline std::string name(const std::uint8_t* d, std::size_t n) { \
    return fuzz_state<state_detail::kind>(d, n);                  \
  }                                                               \
  inline std::vector<std::vector<std::uint8_t>> name##_seeds() {  \
    return state_seeds<state_detail::kind>();                     \
  }
MNEMO_FUZZ_STATE_TARGETS(MNEMO_FUZZ_DEFINE_STATE)
#undef MNEMO_FUZZ_DEFINE_STATE

/// The session file reader (memory/session_format.hpp). Input: a control byte (bit 0:
/// rewrite the file's trailing checksum, so mutations reach the fields behind it) and
/// the file. A refusal has a message and is not `internal`; an accepted session
/// encodes back to exactly its bytes (a plain state file passes through whole).
inline std::string session_file(const std::uint8_t* d, std::size_t n) {
  input_cursor in(d, n);
  const std::uint8_t ctl = in.u8();
  const auto rest = in.rest();
  std::vector<std::uint8_t> file(rest.begin(), rest.end());
  std::uint32_t magic = 0;
  if (file.size() >= 4) std::memcpy(&magic, file.data(), 4);
  if ((ctl & 1) && magic == memory::k_session_magic && file.size() >= 16) {
    const std::uint64_t sum =
        memory::checksum64(std::span<const std::uint8_t>(file).first(file.size() - 8));
    std::memcpy(file.data() + file.size() - 8, &sum, 8);
  }
  auto v = memory::decode_session(file);
  ++(v ? outcomes().accepted : outcomes().refused);
  if (!v) {
    if (v.error().message().empty()) return "refused without a message";
    if (v.error().code() == status_code::internal) return "internal: " + v.error().to_string();
    return {};
  }
  if (!v->has_model)
    return v->state.size() == file.size() && v->lists.empty()
               ? ""
               : "a plain state did not pass through";
  for (const auto& l : v->lists)
    for (std::size_t i = 0; i < l.tokens.size(); ++i)
      if (l.tokens[i].token < 0 || l.tokens[i].pos < 0 ||
          (i > 0 && l.tokens[i].pos <= l.tokens[i - 1].pos))
        return "accepted a list with a bad entry";
  std::vector<std::uint8_t> again;
  memory::encode_session(v->model, v->lists, v->state, again);
  if (again != file) return "an accepted session does not encode back to its bytes";
  return {};
}

inline std::vector<std::vector<std::uint8_t>> session_file_seeds() {
  using namespace state_detail;
  auto m = filled(full_kind::make());
  std::vector<std::vector<std::uint8_t>> seeds;
  memory::session_model model{0x0123456789abcdefull, "llama", "tiny"};
  const std::vector<token_id> ids{1, 5, 9, 2, 7, 3};
  for (const seq_id s : {-1, 0, 1}) {
    std::vector<std::uint8_t> state, out;
    if (!state_write(m, s, state)) continue;
    std::vector<memory::session_tokens> lists;
    if (s <= 0) lists.push_back(memory::session_tokens::from_start(0, ids));
    if (s != 0) lists.push_back(memory::session_tokens::from_start(1, std::span(ids).first(5)));
    memory::encode_session(model, lists, state, out);
    for (const std::uint8_t ctl : {0, 1}) {
      std::vector<std::uint8_t> in{ctl};
      in.insert(in.end(), out.begin(), out.end());
      seeds.push_back(std::move(in));
    }
    if (s < 0) {  // a plain state file
      state.insert(state.begin(), std::uint8_t{0});
      seeds.push_back(std::move(state));
    }
  }
  return seeds;
}

inline std::vector<target_info> state_targets() {
#define MNEMO_FUZZ_LIST(name, kind) {#name, &name, &name##_seeds},
  return {MNEMO_FUZZ_STATE_TARGETS(MNEMO_FUZZ_LIST){"session_file", &session_file,
                                                    &session_file_seeds}};
#undef MNEMO_FUZZ_LIST
}

}  // namespace mnemo::fuzz
