// batched_bench's roofline accounting (examples/common/roofline.hpp) against counts
// worked out by hand: a small Llama's sizes from its file, and the bytes, FLOPs and
// time of micro-batches of a two-layer model with one window layer.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/random_llama.hpp"
#include "common/roofline.hpp"
#include <gtest/gtest.h>
#include <unistd.h>

#include "mnemo/batch/batch.hpp"
#include "mnemo/model/architectures.hpp"

namespace {

namespace fs = std::filesystem;
using mnemo::dtype::element_type;
using mnemo_examples::roofline_cost;
using mnemo_examples::roofline_model;
using mnemo_examples::sequence_run;

// A Llama of d_model 64, 2 layers, 4 heads of 16 on 2 KV heads, ff 128, vocab 512, f16.
TEST(RooflineModel, SizesOfASmallLlamaFile) {
  mnemo_examples::random_llama_config c;
  c.n_vocab = 512;
  c.n_embd = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.n_ff = 128;
  const std::string path =
      (fs::temp_directory_path() / ("mnemo_roofline_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  ASSERT_TRUE(mnemo_examples::write_random_llama(c, path).is_ok());
  auto f = mnemo::gguf::file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.error().message();
  auto hp = mnemo::model::read_decoder_hparams(*f, mnemo::model::llama_arch::recipe);
  ASSERT_TRUE(hp.is_ok()) << hp.error().message();
  auto m = mnemo_examples::roofline_model_of(*f, *hp, element_type::f16);
  ASSERT_TRUE(m.is_ok()) << m.error().message();

  // Per layer: q 64x64, k 64x32, v 64x32, o 64x64, gate and up 64x128, down 128x64.
  const double per_layer = 4096 + 2048 + 2048 + 4096 + 8192 + 8192 + 8192;
  EXPECT_EQ(m->layer_weights, 2 * per_layer);
  // f16 matrices, plus two f32 norms of 64 per layer.
  EXPECT_EQ(m->layer_bytes, 2 * (2 * per_layer + 2 * 64 * 4));
  EXPECT_EQ(m->head_weights, 512 * 64);  // output.weight
  EXPECT_EQ(m->head_bytes, 512 * 64 * 2);
  EXPECT_EQ(m->embd_row_bytes, 64 * 2);
  EXPECT_EQ(m->k_row_bytes, 16 * 2);
  EXPECT_EQ(m->v_row_bytes, 16 * 2);
  ASSERT_EQ(m->layers.size(), 2u);
  EXPECT_EQ(m->layers[1].n_head, 4u);
  EXPECT_EQ(m->layers[1].n_head_kv, 2u);
  EXPECT_EQ(m->layers[1].window, 0u);

  // A head of 16 values is no whole q8_0 block: a status, not a wrong count.
  const auto q8 = mnemo_examples::roofline_model_of(*f, *hp, element_type::q8_0);
  EXPECT_FALSE(q8.is_ok());
  std::remove(path.c_str());
}

// Layer 0 sees every cell before a token, layer 1 a window of 4; both have 4 heads of 16
// on 2 KV heads, and 8 bytes per KV head of K and of V per cell.
roofline_model hand_model() {
  roofline_model m;
  m.layer_bytes = 1000;
  m.layer_weights = 400;
  m.head_bytes = 300;
  m.head_weights = 200;
  m.embd_row_bytes = 10;
  m.k_row_bytes = m.v_row_bytes = 8;
  m.layers = {{4, 2, 16, 16, 0}, {4, 2, 16, 16, 4}};
  return m;
}

// 2 heads of K/V x 16 bytes = 32 bytes per cell and layer; 2 x 4 heads x 32 = 256 FLOPs
// per (token, cell) and layer.
TEST(RooflineCost, OneDecodeStepByHand) {
  const sequence_run one[] = {{0, 9, 9, 1, 1}};  // position 9, after 9 cached cells
  const roofline_cost c = mnemo_examples::micro_batch_cost(hand_model(), one);
  // K/V: layer 0 reads 10 cells, layer 1 its window of 4: 14 x 32.
  EXPECT_EQ(c.bytes, 1000 + 10 + 300 + 14 * 32);
  EXPECT_EQ(c.flops, 2 * 400 + 2 * 200 + 14 * 256);
}

TEST(RooflineCost, TwoSequencesOfOneStepByHand) {
  const sequence_run two[] = {{0, 3, 3, 1, 1}, {1, 7, 7, 1, 1}};
  const roofline_cost c = mnemo_examples::micro_batch_cost(hand_model(), two);
  // Cells: layer 0 4 + 8, layer 1 4 + 4; weights read once for both.
  EXPECT_EQ(c.bytes, 1000 + 2 * 10 + 300 + (12 + 8) * 32);
  EXPECT_EQ(c.flops, 2 * 400 * 2 + 2 * 200 * 2 + (12 + 8) * 256);
}

// A prompt of 6 tokens (logits for the last) in micro-batches of 4: positions 0-3, 4-5.
TEST(RooflineCost, PromptInMicroBatchesByHand) {
  mnemo::batch b;
  for (mnemo::pos_t p = 0; p < 6; ++p) b.add(1, p, {0}, p == 5);
  // Micro-batch 1: layer 0 reads 4 cells and its tokens see 1+2+3+4; layer 1 the same
  // (the window of 4 does not cut yet). No output: no head.
  const double bytes1 = 1000 + 4 * 10 + (4 + 4) * 32, flops1 = 2 * 400 * 4 + (10 + 10) * 256;
  // Micro-batch 2: layer 0 reads 6 cells, sees 5+6; layer 1 reads positions 1-5 (the
  // window of position 4 starts at 1), sees 4+4. One output: the head.
  const double bytes2 = 1000 + 2 * 10 + 300 + (6 + 5) * 32;
  const double flops2 = 2 * 400 * 2 + 2 * 200 + (11 + 8) * 256;
  // 1 byte/s and 5 FLOP/s: micro-batch 1 is bound by its FLOPs, 2 by its bytes.
  const roofline_cost c = mnemo_examples::batch_cost(hand_model(), b, 4, 1e-9, 5e-9);
  EXPECT_EQ(c.bytes, bytes1 + bytes2);
  EXPECT_EQ(c.flops, flops1 + flops2);
  ASSERT_GT(flops1 / 5, bytes1);
  ASSERT_GT(bytes2, flops2 / 5);
  EXPECT_DOUBLE_EQ(c.seconds, flops1 / 5 + bytes2);
}

// Position-major prompts of two sequences: each micro-batch splits by sequence.
TEST(RooflineCost, InterleavedSequencesSplitBySequence) {
  mnemo::batch b;
  for (mnemo::pos_t p = 0; p < 2; ++p)
    for (mnemo::seq_id s = 0; s < 2; ++s) b.add(1, p, {s}, p == 1);
  const roofline_cost c = mnemo_examples::batch_cost(hand_model(), b, 512, 0, 0);
  const sequence_run runs[] = {{0, 0, 1, 2, 1}, {1, 0, 1, 2, 1}};
  const roofline_cost want = mnemo_examples::micro_batch_cost(hand_model(), runs);
  EXPECT_EQ(c.bytes, want.bytes);
  EXPECT_EQ(c.flops, want.flops);
  EXPECT_EQ(c.bytes, 1000 + 4 * 10 + 300 + 2 * (2 + 2) * 32);
  EXPECT_EQ(c.seconds, 0);  // no limits known: no time
}

}  // namespace
