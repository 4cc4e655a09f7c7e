/* The C API compiled as C: open a fixture model, tokenize and detokenize, decode a
 * batch, sample, branch a sequence, save and restore state, abort a decode, and get
 * error codes with messages for bad calls (never an abort). Prints each failed check
 * and "N passed, N failed"; exits nonzero on any failure.
 *
 *   test_engine_c_api MODEL.gguf */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo/c/mnemo.h"

static int g_passed = 0, g_failed = 0;

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (cond) {                                                                                \
      ++g_passed;                                                                              \
    } else {                                                                                   \
      ++g_failed;                                                                              \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              mnemo_last_error());                                                             \
    }                                                                                          \
  } while (0)

static int abort_on_call(void* user) {
  int* countdown = (int*)user;
  return --*countdown == 0;
}

static float max_abs_diff(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float d = fabsf(a[i] - b[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_engine_c_api MODEL.gguf\n");
    return 2;
  }
  mnemo_options o = mnemo_default_options();
  o.kv = "f32";
  o.n_seq_max = 2;
  o.n_ctx = 256;
  o.n_ubatch = 8;
  o.n_threads = 2;

  /* Errors: codes and messages, no abort. */
  mnemo_engine* e = NULL;
  mnemo_options bad = o;
  bad.memory = "iswa";
  CHECK(mnemo_open(argv[1], &bad, &e) == MNEMO_INVALID_ARGUMENT && e == NULL);
  CHECK(strstr(mnemo_last_error(), "iswa") != NULL);
  bad = o;
  bad.kv = "q5_1";
  CHECK(mnemo_open(argv[1], &bad, &e) == MNEMO_INVALID_ARGUMENT);
  CHECK(strstr(mnemo_last_error(), "q5_1") != NULL);
  CHECK(mnemo_open("/no/such/model.gguf", &o, &e) != MNEMO_OK && e == NULL);
  CHECK(mnemo_open(NULL, &o, &e) == MNEMO_INVALID_ARGUMENT);
  CHECK(strcmp(mnemo_status_string(MNEMO_ABORTED), "aborted") == 0);

  CHECK(mnemo_open(argv[1], &o, &e) == MNEMO_OK && e != NULL);
  if (e == NULL) {
    printf("%d passed, %d failed\n", g_passed, g_failed + 1);
    return 1;
  }
  CHECK(strcmp(mnemo_architecture(e), "llama") == 0);
  CHECK(strcmp(mnemo_memory_kind(e), "full") == 0);
  CHECK(mnemo_n_vocab(e) == 512);
  CHECK(mnemo_memory_bytes(e) > 0);
  CHECK(mnemo_n_threads(e) == 2 && mnemo_n_threads_batch(e) == 2);
  CHECK(mnemo_default_thread_count() >= 1);
  CHECK(mnemo_weight_tiles() == 1);
  mnemo_set_weight_tiles(0);
  CHECK(mnemo_weight_tiles() == 0);
  mnemo_set_weight_tiles(1);
  CHECK(mnemo_weight_tiles() == 1);
  CHECK(mnemo_bf16_products() == 0);
  mnemo_set_bf16_products(1);
  CHECK(mnemo_bf16_products() == 1);
  mnemo_set_bf16_products(0);
  CHECK(mnemo_bf16_products() == 0);
  CHECK(mnemo_set_threads(e, 1, 2) == MNEMO_OK && mnemo_n_threads(e) == 1);
  CHECK(mnemo_set_threads(e, -1, 0) == MNEMO_INVALID_ARGUMENT);

  /* Text. */
  mnemo_token ids[64];
  size_t n_ids = 0;
  const char* text = "the cat sat";
  CHECK(mnemo_tokenize(e, text, strlen(text), 1, 0, ids, 64, &n_ids) == MNEMO_OK);
  CHECK(n_ids > 1 && ids[0] == mnemo_bos(e));
  size_t need = 0;
  CHECK(mnemo_tokenize(e, text, strlen(text), 1, 0, ids, 1, &need) == MNEMO_NO_SPACE);
  CHECK(need == n_ids);
  char out[128];
  size_t n_bytes = 0;
  CHECK(mnemo_detokenize(e, ids, n_ids, 0, 1, out, sizeof out, &n_bytes) == MNEMO_OK);
  CHECK(n_bytes == strlen(text) && strcmp(out, text) == 0);
  CHECK(mnemo_detokenize(e, ids, n_ids, 0, 1, out, 2, &n_bytes) == MNEMO_NO_SPACE);

  /* Decode a prompt into sequence 0, every token with logits. */
  enum { N = 12 };
  mnemo_token tok[N];
  mnemo_pos pos[N];
  mnemo_seq seq[N];
  int8_t all[N];
  for (int i = 0; i < N; ++i) {
    tok[i] = (mnemo_token)(3 + (i * 37) % 500);
    pos[i] = i;
    seq[i] = 0;
    all[i] = 1;
  }
  CHECK(mnemo_decode(e, tok, pos, seq, all, N) == MNEMO_OK);
  CHECK(mnemo_n_outputs(e) == N);
  const float* last = mnemo_logits_ith(e, -1);
  CHECK(last != NULL && last == mnemo_logits(e) + (size_t)(N - 1) * mnemo_n_vocab(e));
  const mnemo_token greedy = mnemo_sample(e, NULL, -1);
  CHECK(greedy >= 0 && greedy < 512);
  for (uint32_t v = 0; last != NULL && v < mnemo_n_vocab(e); ++v) CHECK(last[v] <= last[greedy]);
  mnemo_sampler* s = NULL;
  CHECK(mnemo_sampler_new(-1.0f, 0, 1.0f, 1, &s) == MNEMO_INVALID_ARGUMENT && s == NULL);
  CHECK(mnemo_sampler_new(0.8f, 40, 0.95f, 42, &s) == MNEMO_OK && s != NULL);
  const mnemo_token drawn = mnemo_sample(e, s, -1);
  CHECK(drawn >= 0 && drawn < 512);
  CHECK(mnemo_sample(e, s, 1000) == -1);
  mnemo_sampler_free(s);

  /* A bad token: an error code, the memory as before. */
  mnemo_token bad_tok = 99999;
  mnemo_pos bad_pos = N;
  mnemo_seq seq0 = 0;
  CHECK(mnemo_decode(e, &bad_tok, &bad_pos, &seq0, NULL, 1) == MNEMO_INVALID_ARGUMENT);
  CHECK(mnemo_seq_pos_max(e, 0) == N - 1);
  mnemo_seq seq_bad = 70;
  CHECK(mnemo_decode(e, tok, &bad_pos, &seq_bad, NULL, 1) == MNEMO_INVALID_ARGUMENT);
  CHECK(strstr(mnemo_last_error(), "70") != NULL);
  seq_bad = 300; /* beyond any sequence set: refused before the batch is built */
  CHECK(mnemo_decode(e, tok, &bad_pos, &seq_bad, NULL, 1) == MNEMO_INVALID_ARGUMENT);
  CHECK(strstr(mnemo_last_error(), "300") != NULL);

  /* Branch: copy sequence 0 into 1, decode the same token in both: the same logits. */
  CHECK(mnemo_seq_cp(e, 0, 1, -1, -1) == MNEMO_OK);
  CHECK(mnemo_seq_pos_max(e, 1) == N - 1);
  mnemo_token two_tok[2] = {greedy, greedy};
  mnemo_pos two_pos[2] = {N, N};
  mnemo_seq two_seq[2] = {0, 1};
  int8_t two_out[2] = {1, 1};
  CHECK(mnemo_decode(e, two_tok, two_pos, two_seq, two_out, 2) == MNEMO_OK);
  CHECK(mnemo_n_outputs(e) == 2);
  if (mnemo_n_outputs(e) == 2)
    CHECK(max_abs_diff(mnemo_logits_ith(e, 0), mnemo_logits_ith(e, 1), 512) <= 1e-5f);

  /* State: save, change, restore, decode again: the same logits. */
  uint8_t* state = NULL;
  size_t state_size = 0;
  CHECK(mnemo_state_write(e, -1, &state, &state_size) == MNEMO_OK && state_size > 0);
  mnemo_pos next_pos = N + 1;
  CHECK(mnemo_decode(e, tok, &next_pos, &seq0, NULL, 1) == MNEMO_OK);
  float* first = (float*)malloc(512 * sizeof(float));
  memcpy(first, mnemo_logits_ith(e, -1), 512 * sizeof(float));
  CHECK(mnemo_seq_rm(e, 0, N, -1) == MNEMO_OK && mnemo_seq_pos_max(e, 0) == N - 1);
  CHECK(mnemo_state_read(e, state, state_size, -1) == MNEMO_OK);
  CHECK(mnemo_seq_pos_max(e, 0) == N);
  CHECK(mnemo_decode(e, tok, &next_pos, &seq0, NULL, 1) == MNEMO_OK);
  CHECK(max_abs_diff(first, mnemo_logits_ith(e, -1), 512) == 0.0f);
  CHECK(mnemo_state_read(e, state, state_size / 2, -1) != MNEMO_OK);
  mnemo_free(state);
  free(first);

  /* Abort the second check of a long decode: aborted, the memory as before. */
  int countdown = 2;
  mnemo_set_abort_callback(e, abort_on_call, &countdown);
  const mnemo_pos before = mnemo_seq_pos_max(e, 1);
  for (int i = 0; i < N; ++i) {
    pos[i] = before + 1 + i;
    seq[i] = 1;
  }
  CHECK(mnemo_decode(e, tok, pos, seq, NULL, N) == MNEMO_ABORTED);
  CHECK(strstr(mnemo_last_error(), "abort") != NULL);
  CHECK(mnemo_seq_pos_max(e, 1) == before && mnemo_n_outputs(e) == 0);
  mnemo_set_abort_callback(e, NULL, NULL);
  CHECK(mnemo_decode(e, tok, pos, seq, NULL, N) == MNEMO_OK);

  /* Sequence operations the memory refuses come back as codes. */
  CHECK(mnemo_seq_rm(e, 99, -1, -1) == MNEMO_OUT_OF_RANGE);
  CHECK(mnemo_seq_keep(e, 0) == MNEMO_OK && mnemo_seq_pos_max(e, 1) == -1);
  CHECK(mnemo_seq_add(e, 0, 0, -1, 2) == MNEMO_OK && mnemo_seq_pos_min(e, 0) == 2);
  CHECK(mnemo_seq_div(e, 0, 0, -1, 2) == MNEMO_OK);
  mnemo_clear(e, 1);
  CHECK(mnemo_seq_pos_max(e, 0) == -1);
  CHECK(mnemo_decode(NULL, tok, pos, seq, NULL, 1) == MNEMO_INVALID_ARGUMENT);

  mnemo_close(e);
  mnemo_close(NULL);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
