/* mnemo's C API: an opaque engine (a GGUF model, its tokenizer, a memory and a
 * context, chosen at run time) and an opaque sampler. Every call that can fail returns
 * a mnemo_status code; mnemo_last_error() gives the message of the calling thread's
 * last failure. No call aborts the process and no C++ exception crosses this boundary.
 *
 *   mnemo_options o = mnemo_default_options();
 *   o.n_seq_max = 2;
 *   mnemo_engine* e = NULL;
 *   if (mnemo_open("model.gguf", &o, &e) != MNEMO_OK) puts(mnemo_last_error());
 *   ...
 *   mnemo_close(e);
 *
 * Library: mnemo::c (libmnemo_c); docs/c-api.md. */
#ifndef MNEMO_C_MNEMO_H
#define MNEMO_C_MNEMO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define MNEMO_C_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MNEMO_C_API __attribute__((visibility("default")))
#else
#define MNEMO_C_API
#endif

typedef int32_t mnemo_token;
typedef int32_t mnemo_pos;
typedef int32_t mnemo_seq;

/* The values of mnemo::status_code. */
typedef enum mnemo_status {
  MNEMO_OK = 0,
  MNEMO_INVALID_ARGUMENT = 1,
  MNEMO_OUT_OF_RANGE = 2,
  MNEMO_NO_SPACE = 3,
  MNEMO_NOT_FOUND = 4,
  MNEMO_UNSUPPORTED = 5,
  MNEMO_CORRUPT_DATA = 6,
  MNEMO_IO_ERROR = 7,
  MNEMO_FAILED_COMPUTE = 8,
  MNEMO_INTERNAL = 9,
  MNEMO_ABORTED = 10
} mnemo_status;

typedef enum mnemo_log_level {
  MNEMO_LOG_DEBUG = 0,
  MNEMO_LOG_INFO = 1,
  MNEMO_LOG_WARN = 2,
  MNEMO_LOG_ERROR = 3
} mnemo_log_level;

typedef struct mnemo_engine mnemo_engine;
typedef struct mnemo_sampler mnemo_sampler;

/* Returns nonzero to stop the decode (or load) in progress: it fails with MNEMO_ABORTED
 * and the memory is as before. */
typedef int (*mnemo_abort_fn)(void* user);
typedef void (*mnemo_progress_fn)(float fraction, void* user);
typedef void (*mnemo_log_fn)(int level, const char* message, void* user);

/* Names are those of docs/engine.md; NULL means the default. */
typedef struct mnemo_options {
  const char* memory;       /* "auto" | full | split | iswa | iswa-split | recurrent | hybrid |
                               hybrid-split | bounded */
  const char* kv;           /* "f16" | f32 | bf16 | q8_0 | q4_0 */
  const char* evict_policy; /* "none" | h2o | tova | snapkv | streaming_llm | quest */
  size_t evict_budget;      /* cells per (sequence, layer) with a policy; quest: read per row */
  uint32_t n_ctx;           /* cells of all sequences together */
  int32_t n_seq_max;        /* sequence ids in [0, n_seq_max) */
  uint32_t n_ubatch;        /* most tokens per micro-batch */
  uint32_t n_batch;         /* most tokens per decode call; 0 = unlimited */
  int32_t n_threads;        /* single-token micro-batches; 0: physical cores */
  int32_t n_threads_batch;  /* multi-token micro-batches; 0: n_threads */
  int32_t recompute;        /* nonzero: recompute forgotten windows (docs/context.md) */
  int32_t use_mmap;         /* nonzero: map the file (default) */
  mnemo_abort_fn abort_callback;
  void* abort_user;
  mnemo_progress_fn progress_callback;
  void* progress_user;
  mnemo_log_fn log_callback;
  void* log_user;
} mnemo_options;

/* ---- errors ---------------------------------------------------------------------- */

/* The message of this thread's last failed call ("" if none); valid until the next
 * failing call on this thread. */
MNEMO_C_API const char* mnemo_last_error(void);
/* "ok", "invalid argument", ... */
MNEMO_C_API const char* mnemo_status_string(int code);

/* ---- open / close ------------------------------------------------------------------ */

MNEMO_C_API mnemo_options mnemo_default_options(void);
MNEMO_C_API int mnemo_open(const char* path, const mnemo_options* options, mnemo_engine** out);
MNEMO_C_API void mnemo_close(mnemo_engine* e);

/* "llama", "gemma3", ... */
MNEMO_C_API const char* mnemo_architecture(const mnemo_engine* e);
/* The memory kind used ("full", "iswa", ...), after "auto" was resolved. */
MNEMO_C_API const char* mnemo_memory_kind(const mnemo_engine* e);
MNEMO_C_API uint32_t mnemo_n_vocab(const mnemo_engine* e);
/* Bytes of K/V and recurrent state the memory holds. */
MNEMO_C_API size_t mnemo_memory_bytes(const mnemo_engine* e);

/* ---- threads and hooks ------------------------------------------------------------- */

/* 0: the defaults (physical cores; n_threads_batch = n_threads). */
MNEMO_C_API int mnemo_set_threads(mnemo_engine* e, int32_t n_threads, int32_t n_threads_batch);
MNEMO_C_API int32_t mnemo_n_threads(const mnemo_engine* e);
MNEMO_C_API int32_t mnemo_n_threads_batch(const mnemo_engine* e);
/* Physical cores available to this process. */
MNEMO_C_API int32_t mnemo_default_thread_count(void);
/* Process-wide, before mnemo_open: 0 loads q4_0 and k-quant weights without their second
 * copy as tiles (less memory, slower generation on AVX-512 VNNI CPUs; docs/products.md),
 * nonzero (the default) with it. Engines already open keep theirs. */
MNEMO_C_API void mnemo_set_weight_tiles(int enabled);
MNEMO_C_API int mnemo_weight_tiles(void);
/* Process-wide, for calls that start afterwards: nonzero lets decode attention of four or
 * more query rows per KV head (GQA 4 and up, small prompt chunks) use bf16 products where
 * the CPU has AVX512_BF16 (faster, rounds the query, K, V and probabilities to bf16;
 * docs/attention.md), 0 (the default) keeps f32. mnemo_bf16_products gives the setting,
 * mnemo_bf16_products_supported whether this CPU runs them. */
MNEMO_C_API void mnemo_set_bf16_products(int enabled);
MNEMO_C_API int mnemo_bf16_products(void);
MNEMO_C_API int mnemo_bf16_products_supported(void);
MNEMO_C_API void mnemo_set_abort_callback(mnemo_engine* e, mnemo_abort_fn fn, void* user);

/* ---- text ------------------------------------------------------------------------- */

/* Writes up to `capacity` ids to `out` and the count to *n_tokens. MNEMO_NO_SPACE when
 * capacity is too small (then *n_tokens is the count needed and nothing is written). */
MNEMO_C_API int mnemo_tokenize(const mnemo_engine* e, const char* text, size_t text_len,
                               int add_special, int parse_special, mnemo_token* out,
                               size_t capacity, size_t* n_tokens);
/* Writes the text (not NUL-terminated when it fills `capacity` exactly; a NUL follows
 * otherwise) and its length to *n_bytes; MNEMO_NO_SPACE with the length needed when
 * it does not fit. text_start = 0 for a continuation. */
MNEMO_C_API int mnemo_detokenize(const mnemo_engine* e, const mnemo_token* ids, size_t n_ids,
                                 int render_special, int text_start, char* out, size_t capacity,
                                 size_t* n_bytes);
MNEMO_C_API mnemo_token mnemo_bos(const mnemo_engine* e);
MNEMO_C_API mnemo_token mnemo_eos(const mnemo_engine* e);

/* ---- decoding --------------------------------------------------------------------- */

/* Decodes n tokens, token i at position pos[i] in sequence seq[i]. output (may be
 * NULL: the last token only) marks the tokens whose logits are kept. On failure the
 * memory is as before. */
MNEMO_C_API int mnemo_decode(mnemo_engine* e, const mnemo_token* tokens, const mnemo_pos* pos,
                             const mnemo_seq* seq, const int8_t* output, size_t n);
MNEMO_C_API uint32_t mnemo_n_outputs(const mnemo_engine* e);
/* [n_outputs, n_vocab] logits of the last decode, output tokens in batch order. */
MNEMO_C_API const float* mnemo_logits(const mnemo_engine* e);
/* The row of batch token i (i < 0 counts outputs from the end); NULL if it has none. */
MNEMO_C_API const float* mnemo_logits_ith(const mnemo_engine* e, int32_t i);

/* ---- sampling --------------------------------------------------------------------- */

/* temperature 0 or top_k 1: greedy; top_k 0 and top_p 1 keep every token. */
MNEMO_C_API int mnemo_sampler_new(float temperature, uint32_t top_k, float top_p, uint64_t seed,
                                  mnemo_sampler** out);
MNEMO_C_API void mnemo_sampler_free(mnemo_sampler* s);
/* A token from the logits of batch token i (s == NULL: greedy); -1 if i has none. */
MNEMO_C_API mnemo_token mnemo_sample(const mnemo_engine* e, mnemo_sampler* s, int32_t i);

/* ---- sequences (llama.cpp's conventions: p0 < 0 is 0, p1 < 0 the end) ------------- */

MNEMO_C_API int mnemo_seq_rm(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1);
MNEMO_C_API int mnemo_seq_cp(mnemo_engine* e, mnemo_seq src, mnemo_seq dst, mnemo_pos p0,
                             mnemo_pos p1);
MNEMO_C_API int mnemo_seq_keep(mnemo_engine* e, mnemo_seq s);
MNEMO_C_API int mnemo_seq_add(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1,
                              mnemo_pos delta);
MNEMO_C_API int mnemo_seq_div(mnemo_engine* e, mnemo_seq s, mnemo_pos p0, mnemo_pos p1, int d);
/* -1 when s holds nothing (or is out of range). */
MNEMO_C_API mnemo_pos mnemo_seq_pos_min(const mnemo_engine* e, mnemo_seq s);
MNEMO_C_API mnemo_pos mnemo_seq_pos_max(const mnemo_engine* e, mnemo_seq s);
MNEMO_C_API void mnemo_clear(mnemo_engine* e, int data);

/* ---- state ------------------------------------------------------------------------ */

/* The memory's state (s = -1: all sequences) in a buffer the caller frees with
 * mnemo_free. */
MNEMO_C_API int mnemo_state_write(mnemo_engine* e, mnemo_seq s, uint8_t** data, size_t* size);
/* Loads a state written by mnemo_state_write (dest = -1: the whole memory). */
MNEMO_C_API int mnemo_state_read(mnemo_engine* e, const uint8_t* data, size_t size, mnemo_seq dest);
MNEMO_C_API void mnemo_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* MNEMO_C_MNEMO_H */
