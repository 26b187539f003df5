// The shared real models load as llama models with llama.cpp's defaults for absent keys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/llama_model.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

TEST(LlamaModelReal, Stories260K) {
  const auto model = LlamaModel::load(test::model_path("stories260K.gguf"));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, 64u);
  EXPECT_EQ(c.n_layers, 5u);
  EXPECT_EQ(c.n_heads, 8u);
  EXPECT_EQ(c.n_kv_heads, 4u);
  EXPECT_EQ(c.head_dim, 8u);
  EXPECT_EQ(c.hidden_dim, 172u);
  EXPECT_EQ(c.vocab_size, 512u);
  EXPECT_EQ(c.context_length, 2048u);
  EXPECT_EQ(c.rope_dim, 8u);
  EXPECT_FLOAT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 1.0f);
  EXPECT_EQ(c.kv_dim(), 32u);
  EXPECT_EQ(c.q_dim(), 64u);
  EXPECT_FALSE(c.tied_embeddings);  // output.weight is present (a copy of token_embd)

  const LlamaWeights& w = model->weights();
  ASSERT_EQ(w.layers.size(), 5u);
  EXPECT_EQ(w.layers[4].w_down.rows, 64u);
  EXPECT_EQ(w.layers[4].w_down.cols, 172u);
  EXPECT_EQ(w.layers[0].wk.rows, 32u);
  EXPECT_EQ(w.output.name, "output.weight");
  // output.weight is a copy of token_embd.weight in this file.
  EXPECT_EQ(std::memcmp(w.output.data, w.token_embd.data, w.token_embd.nbytes), 0);
  // What a decode step streams, F32: 5 layers of q, k, v, o (64x64, 32x64, 32x64, 64x64), gate and
  // up (172x64) and down (64x172), and the 512x64 output; the embedding table is not counted.
  const uint64_t per_layer = (64 * 64 + 32 * 64 + 32 * 64 + 64 * 64 + 3 * 172 * 64) * 4;
  EXPECT_EQ(step_matrix_bytes(w), 5 * per_layer + 512 * 64 * 4);

  std::vector<float> row(64);
  dequantize_tensor_row(w.token_embd, 511, row.data());
  float sum_sq = 0;
  for (float x : row) sum_sq += x * x;
  EXPECT_GT(sum_sq, 0.0f);
  EXPECT_TRUE(std::isfinite(sum_sq));
  EXPECT_THROW(dequantize_tensor_row(w.token_embd, 512, row.data()), Error);
}

TEST(LlamaModelReal, Aidreams260K) {
  const auto model = LlamaModel::load(test::model_path("aidreams260K.gguf"));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.n_layers, 4u);
  EXPECT_EQ(c.n_heads, 4u);
  EXPECT_EQ(c.n_kv_heads, 4u);
  EXPECT_EQ(c.head_dim, 16u);
  EXPECT_EQ(c.hidden_dim, 172u);
  EXPECT_EQ(c.vocab_size, 512u);
  EXPECT_EQ(c.context_length, 128u);
}

TEST(LlamaModelReal, VocabOnlyFileIsRejectedClearly) {
  try {
    LlamaModel::load(test::model_path("llama2-vocab.gguf"));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama2-vocab.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vks
