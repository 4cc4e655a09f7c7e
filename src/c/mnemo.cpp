// The C API (c/mnemo.h) over mnemo::engine, built as the shared library mnemo::c. The
// engine's instantiations are compiled once, in the mnemo::engine library
// (src/engine/*.cpp) that this library links; this file includes no model and no memory
// strategy.
//
// Every C entry point turns a status into its code and keeps the message for
// mnemo_last_error(); with exceptions enabled, anything thrown (std::bad_alloc) stops
// here and comes back as MNEMO_INTERNAL.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mnemo/attention/product_precision.hpp"
#include "mnemo/base/parallel.hpp"
#include "mnemo/c/mnemo.h"
#include "mnemo/engine/engine.hpp"
#include "mnemo/model/weight_tiles.hpp"
#include "mnemo/sampling.hpp"

namespace {
/// The C callbacks whose signatures differ from mnemo's (int for bool, int for
/// log_level) reach mnemo through trampolines that get these as their user pointer.
struct c_callbacks {
  mnemo_abort_fn abort = nullptr;
  void* abort_user = nullptr;
  mnemo_log_fn log = nullptr;
  void* log_user = nullptr;
};
bool call_c_abort(void* user) {
  const auto* c = static_cast<const c_callbacks*>(user);
  return c->abort != nullptr && c->abort(c->abort_user) != 0;
}
void call_c_log(mnemo::log_level level, const char* message, void* user) {
  const auto* c = static_cast<const c_callbacks*>(user);
  if (c->log != nullptr) c->log(static_cast<int>(level), message, c->log_user);
}
/// mnemo's hooks over `c` (which must outlive their use).
mnemo::context_hooks hooks_over(const c_callbacks& c, mnemo_progress_fn progress,
                                void* progress_user) {
  mnemo::context_hooks h;
  if (c.abort != nullptr) h.abort = {call_c_abort, const_cast<c_callbacks*>(&c)};
  if (c.log != nullptr) h.log = {call_c_log, const_cast<c_callbacks*>(&c)};
  h.progress = {progress, progress_user};
  return h;
}
}  // namespace

struct mnemo_engine {
  mnemo::engine e;
  std::string memory_kind;  // for mnemo_memory_kind's pointer
  c_callbacks callbacks;    // at a fixed address: the engine's hooks point here
};

struct mnemo_sampler {
  mnemo::sampler s;
};

namespace {

thread_local std::string g_last_error;

int fail(const mnemo::status& st) {
  g_last_error = st.to_string();
  return static_cast<int>(st.code());
}
int fail(int code, const char* message) {
  g_last_error = message;
  return code;
}
int report(const mnemo::status& st) { return st ? MNEMO_OK : fail(st); }

/// Runs body() (returning an int status code), turning a thrown exception into
/// MNEMO_INTERNAL.
template <class Body>
int guarded(Body&& body) noexcept {
#if MNEMO_HAS_EXCEPTIONS
  try {
    return body();
  } catch (const std::exception& ex) {
    return fail(MNEMO_INTERNAL, ex.what());
  } catch (...) {
    return fail(MNEMO_INTERNAL, "unknown C++ exception");
  }
#else
  return body();
#endif
}

int null_argument(const char* fn) {
  g_last_error = std::string("invalid argument: ") + fn + ": a required pointer is NULL";
  return MNEMO_INVALID_ARGUMENT;
}

mnemo::status options_from(const mnemo_options& c, mnemo::engine_options& o) {
  if (c.memory != nullptr) {
    MNEMO_ASSIGN_OR_RETURN(o.memory, mnemo::parse_memory_kind(c.memory));
  }
  if (c.kv != nullptr) {
    MNEMO_ASSIGN_OR_RETURN(o.kv, mnemo::parse_kv_type(c.kv));
  }
  if (c.evict_policy != nullptr) {
    MNEMO_ASSIGN_OR_RETURN(o.policy, mnemo::parse_evict_policy(c.evict_policy));
  }
  o.evict_budget = c.evict_budget;
  o.n_ctx = c.n_ctx;
  o.n_seq_max = c.n_seq_max;
  o.n_ubatch = c.n_ubatch;
  o.n_batch = c.n_batch;
  o.n_threads = c.n_threads;
  o.n_threads_batch = c.n_threads_batch;
  o.recompute = c.recompute != 0;
  o.use_mmap = c.use_mmap != 0;
  return {};
}

}  // namespace

extern "C" {

const char* mnemo_last_error(void) { return g_last_error.c_str(); }

const char* mnemo_status_string(int code) {
  if (code < 0 || code > static_cast<int>(mnemo::status_code::aborted)) return "unknown";
  return mnemo::to_string(static_cast<mnemo::status_code>(code)).data();
}

mnemo_options mnemo_default_options(void) {
  const mnemo::engine_options d;
  mnemo_options o{};
  o.evict_budget = d.evict_budget;
  o.n_ctx = d.n_ctx;
  o.n_seq_max = d.n_seq_max;
  o.n_ubatch = d.n_ubatch;
  o.n_batch = d.n_batch;
  o.n_threads = d.n_threads;
  o.n_threads_batch = d.n_threads_batch;
  o.recompute = d.recompute ? 1 : 0;
  o.use_mmap = d.use_mmap ? 1 : 0;
  return o;
}

int mnemo_open(const char* path, const mnemo_options* options, mnemo_engine** out) {
  return guarded([&]() -> int {
    if (path == nullptr || out == nullptr) return null_argument("mnemo_open");
    *out = nullptr;
    const mnemo_options c = options != nullptr ? *options : mnemo_default_options();
    mnemo::engine_options o;
    if (mnemo::status st = options_from(c, o); !st) return fail(st);
    // During open the hooks point at this frame's copy, then at the engine's.
    const c_callbacks load{c.abort_callback, c.abort_user, c.log_callback, c.log_user};
    o.hooks = hooks_over(load, c.progress_callback, c.progress_user);
    auto e = mnemo::engine::open(path, o);
    if (!e.is_ok()) return fail(e.error());
    const std::string kind(mnemo::to_string(e->options().memory));
    auto* h = new mnemo_engine{std::move(*e), kind, load};
    h->e.set_hooks(hooks_over(h->callbacks, c.progress_callback, c.progress_user));
    *out = h;
    return MNEMO_OK;
  });
}

void mnemo_close(mnemo_engine* e) { delete e; }

const char* mnemo_architecture(const mnemo_engine* e) {
  return e != nullptr ? e->e.architecture().data() : "";
}
const char* mnemo_memory_kind(const mnemo_engine* e) {
  return e != nullptr ? e->memory_kind.c_str() : "";
}
uint32_t mnemo_n_vocab(const mnemo_engine* e) { return e != nullptr ? e->e.n_vocab() : 0; }
size_t mnemo_memory_bytes(const mnemo_engine* e) {
  if (e == nullptr) return 0;
  size_t n = 0;
  guarded([&] {
    n = e->e.report().total_bytes;
    return 0;
  });
  return n;
}

int mnemo_set_threads(mnemo_engine* e, int32_t n_threads, int32_t n_threads_batch) {
  if (e == nullptr) return null_argument("mnemo_set_threads");
  if (n_threads < 0 || n_threads_batch < 0)
    return fail(MNEMO_INVALID_ARGUMENT,
                "invalid argument: mnemo_set_threads: thread counts must be >= 0 (0: default)");
  e->e.set_threads(n_threads, n_threads_batch);
  return MNEMO_OK;
}
int32_t mnemo_n_threads(const mnemo_engine* e) { return e ? e->e.options().n_threads : 0; }
int32_t mnemo_n_threads_batch(const mnemo_engine* e) {
  return e ? e->e.options().n_threads_batch : 0;
}
int32_t mnemo_default_thread_count(void) { return mnemo::default_thread_count(); }

void mnemo_set_weight_tiles(int enabled) { mnemo::model::set_weight_tiles_enabled(enabled != 0); }

int mnemo_weight_tiles(void) { return mnemo::model::weight_tiles_enabled() ? 1 : 0; }

void mnemo_set_bf16_products(int enabled) {
  using mnemo::attention::product_precision;
  mnemo::attention::set_product_precision(enabled != 0 ? product_precision::bf16
                                                       : product_precision::f32);
}

int mnemo_bf16_products(void) {
  return mnemo::attention::current_product_precision() == mnemo::attention::product_precision::bf16
             ? 1
             : 0;
}

int mnemo_bf16_products_supported(void) {
  return mnemo::attention::bf16_products_supported() ? 1 : 0;
}

void mnemo_set_abort_callback(mnemo_engine* e, mnemo_abort_fn fn, void* user) {
  if (e == nullptr) return;
  e->callbacks.abort = fn;
  e->callbacks.abort_user = user;
  mnemo::context_hooks h = e->e.options().hooks;
  h.abort =
      fn != nullptr ? mnemo::abort_callback{call_c_abort, &e->callbacks} : mnemo::abort_callback{};
  e->e.set_hooks(h);
}

int mnemo_tokenize(const mnemo_engine* e, const char* text, size_t text_len, int add_special,
                   int parse_special, mnemo_token* out, size_t capacity, size_t* n_tokens) {
  return guarded([&]() -> int {
    if (e == nullptr || (text == nullptr && text_len > 0) || n_tokens == nullptr ||
        (out == nullptr && capacity > 0))
      return null_argument("mnemo_tokenize");
    auto ids = e->e.tokenize(std::string_view(text != nullptr ? text : "", text_len),
                             add_special != 0, parse_special != 0);
    if (!ids.is_ok()) return fail(ids.error());
    *n_tokens = ids->size();
    if (ids->size() > capacity)
      return fail(MNEMO_NO_SPACE, "no space: mnemo_tokenize: the output array is too small");
    if (!ids->empty()) std::memcpy(out, ids->data(), ids->size() * sizeof(mnemo_token));
    return MNEMO_OK;
  });
}

int mnemo_detokenize(const mnemo_engine* e, const mnemo_token* ids, size_t n_ids,
                     int render_special, int text_start, char* out, size_t capacity,
                     size_t* n_bytes) {
  return guarded([&]() -> int {
    if (e == nullptr || (ids == nullptr && n_ids > 0) || n_bytes == nullptr ||
        (out == nullptr && capacity > 0))
      return null_argument("mnemo_detokenize");
    auto text = e->e.detokenize(std::span<const mnemo_token>(ids, n_ids), render_special != 0,
                                text_start != 0);
    if (!text.is_ok()) return fail(text.error());
    *n_bytes = text->size();
    if (text->size() > capacity)
      return fail(MNEMO_NO_SPACE, "no space: mnemo_detokenize: the output buffer is too small");
    std::memcpy(out, text->data(), text->size());
    if (text->size() < capacity) out[text->size()] = '\0';
    return MNEMO_OK;
  });
}

mnemo_token mnemo_bos(const mnemo_engine* e) { return e ? e->e.bos() : -1; }
mnemo_token mnemo_eos(const mnemo_engine* e) { return e ? e->e.eos() : -1; }

int mnemo_decode(mnemo_engine* e, const mnemo_token* tokens, const mnemo_pos* pos,
                 const mnemo_seq* seq, const int8_t* output, size_t n) {
  return guarded([&]() -> int {
    if (e == nullptr || (n > 0 && (tokens == nullptr || pos == nullptr || seq == nullptr)))
      return null_argument("mnemo_decode");
    mnemo::batch b;
    for (size_t i = 0; i < n; ++i) {
      // An id outside [0, k_max_seq) cannot enter a seq_set (the batch asserts on it);
      // ids inside it but beyond n_seq_max are named by the decode's validation.
      if (seq[i] < 0 || seq[i] >= mnemo::k_max_seq)
        return fail(MNEMO_INVALID_ARGUMENT,
                    ("invalid argument: mnemo_decode: token " + std::to_string(i) +
                     ": invalid sequence id " + std::to_string(seq[i]))
                        .c_str());
      b.add(tokens[i], pos[i], {seq[i]}, output != nullptr ? output[i] != 0 : i + 1 == n);
    }
    return report(e->e.decode(b));
  });
}

uint32_t mnemo_n_outputs(const mnemo_engine* e) { return e ? e->e.n_outputs() : 0; }
const float* mnemo_logits(const mnemo_engine* e) {
  if (e == nullptr || e->e.n_outputs() == 0) return nullptr;
  return e->e.logits().data();
}
const float* mnemo_logits_ith(const mnemo_engine* e, int32_t i) {
  if (e == nullptr) return nullptr;
  const auto row = e->e.logits_ith(i);
  return row.empty() ? nullptr : row.data();
}

int mnemo_sampler_new(float temperature, uint32_t top_k, float top_p, uint64_t seed,
                      mnemo_sampler** out) {
  return guarded([&]() -> int {
    if (out == nullptr) return null_argument("mnemo_sampler_new");
    *out = nullptr;
    auto s = mnemo::sampler::make(
        {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed});
    if (!s.is_ok()) return fail(s.error());
    *out = new mnemo_sampler{std::move(*s)};
    return MNEMO_OK;
  });
}
void mnemo_sampler_free(mnemo_sampler* s) { delete s; }

mnemo_token mnemo_sample(const mnemo_engine* e, mnemo_sampler* s, int32_t i) {
  if (e == nullptr) return -1;
  mnemo_token t = -1;
  guarded([&] {
    const auto row = e->e.logits_ith(i);
    t = s != nullptr ? s->s.sample(row) : mnemo::sample_greedy(row);
    return 0;
  });
  return t;
}

int mnemo_seq_rm(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1) {
  if (e == nullptr) return null_argument("mnemo_seq_rm");
  return guarded([&] { return report(e->e.seq_rm(s, p0, p1)); });
}
int mnemo_seq_cp(mnemo_engine* e, mnemo_seq src, mnemo_seq dst, mnemo_pos p0, mnemo_pos p1) {
  if (e == nullptr) return null_argument("mnemo_seq_cp");
  return guarded([&] { return report(e->e.seq_cp(src, dst, p0, p1)); });
}
int mnemo_seq_keep(mnemo_engine* e, mnemo_seq s) {
  if (e == nullptr) return null_argument("mnemo_seq_keep");
  return guarded([&] { return report(e->e.seq_keep(s)); });
}
int mnemo_seq_add(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1, mnemo_pos delta) {
  if (e == nullptr) return null_argument("mnemo_seq_add");
  return guarded([&] { return report(e->e.seq_add(s, p0, p1, delta)); });
}
int mnemo_seq_div(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1, int d) {
  if (e == nullptr) return null_argument("mnemo_seq_div");
  return guarded([&] { return report(e->e.seq_div(s, p0, p1, d)); });
}
mnemo_pos mnemo_seq_pos_min(const mnemo_engine* e, mnemo_seq s) {
  return e ? e->e.seq_pos_min(s) : -1;
}
mnemo_pos mnemo_seq_pos_max(const mnemo_engine* e, mnemo_seq s) {
  return e ? e->e.seq_pos_max(s) : -1;
}
void mnemo_clear(mnemo_engine* e, int data) {
  if (e != nullptr) e->e.clear(data != 0);
}

int mnemo_state_write(mnemo_engine* e, mnemo_seq s, uint8_t** data, size_t* size) {
  return guarded([&]() -> int {
    if (e == nullptr || data == nullptr || size == nullptr)
      return null_argument("mnemo_state_write");
    *data = nullptr;
    *size = 0;
    std::vector<std::uint8_t> bytes;
    if (mnemo::status st = e->e.state_write(s, bytes); !st) return fail(st);
    auto* p = static_cast<uint8_t*>(std::malloc(bytes.empty() ? 1 : bytes.size()));
    if (p == nullptr) return fail(MNEMO_NO_SPACE, "no space: mnemo_state_write: out of memory");
    if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
    *data = p;
    *size = bytes.size();
    return MNEMO_OK;
  });
}
int mnemo_state_read(mnemo_engine* e, const uint8_t* data, size_t size, mnemo_seq dest) {
  if (e == nullptr || (data == nullptr && size > 0)) return null_argument("mnemo_state_read");
  return guarded(
      [&] { return report(e->e.state_read(std::span<const std::uint8_t>(data, size), dest)); });
}
void mnemo_free(void* p) { std::free(p); }

}  // extern "C"
