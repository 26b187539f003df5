// Hyperparameters from llama.* keys with llama.cpp's defaults, and the loader's error messages for
// files built wrong in one way each (missing tensor, wrong shape, unsupported type, other arch).
#include <gtest/gtest.h>

#include "engine/model/llama_model.h"
#include "tests/model/tiny_llama_gguf.h"

namespace vks {
namespace {

using test::TinyLlamaSpec;

std::unique_ptr<LlamaModel> load_bytes(const std::vector<uint8_t>& bytes) {
  return LlamaModel::from_file(gguf::GgufFile::parse(bytes));
}

// Loads and expects an Error of `code` whose message contains every one of `words`.
void expect_load_error(const TinyLlamaSpec& spec, ErrorCode code, std::vector<std::string> words) {
  const std::vector<uint8_t> bytes = test::build_tiny_llama(spec);
  try {
    load_bytes(bytes);
    FAIL() << "loaded without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "'" << w << "' not in: " << e.what();
  }
}

TEST(LlamaConfig, DefaultsForAbsentKeys) {
  TinyLlamaSpec spec;
  spec.tied = true;
  spec.edit_metadata = [](gguf::GgufWriter& w) {
    w.remove("llama.attention.head_count_kv");
    w.remove("llama.attention.layer_norm_rms_epsilon");
  };
  spec.n_kv_heads = spec.n_heads;  // tensors follow the default
  const std::vector<uint8_t> bytes = test::build_tiny_llama(spec);
  const auto model = load_bytes(bytes);
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.n_kv_heads, c.n_heads);
  EXPECT_EQ(c.head_dim, 16u);
  EXPECT_EQ(c.rope_dim, 16u);
  EXPECT_FLOAT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 1.0f);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.vocab_size, 40u);
  EXPECT_EQ(c.name, "tiny-test");
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(model->weights().output.name, "token_embd.weight");
  EXPECT_EQ(model->weights().output.data, model->weights().token_embd.data);
}

TEST(LlamaConfig, ExplicitValues) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) {
    w.set("llama.rope.freq_base", gguf::make_float32(500000.0f));
    w.set("llama.rope.scaling.type", gguf::make_string("linear"));
    w.set("llama.rope.scaling.factor", gguf::make_float32(4.0f));
    w.set("llama.attention.layer_norm_rms_epsilon", gguf::make_float32(1e-6f));
    w.set("llama.rope.dimension_count", gguf::make_uint32(8));
  };
  const std::vector<uint8_t> bytes = test::build_tiny_llama(spec);
  const auto model = load_bytes(bytes);
  const LlamaConfig& c = model->config();
  EXPECT_FLOAT_EQ(c.rope_freq_base, 500000.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_dim, 8u);
  EXPECT_EQ(c.n_kv_heads, 2u);
  EXPECT_EQ(c.kv_dim(), 32u);
  EXPECT_EQ(c.q_dim(), 64u);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_EQ(model->weights().output.name, "output.weight");
}

TEST(LlamaModelTypes, EverySupportedMatrixTypeLoads) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    TinyLlamaSpec spec;
    spec.matrix_type = t;
    const std::vector<uint8_t> bytes = test::build_tiny_llama(spec);
    const auto model = load_bytes(bytes);
    const TensorRef& wq = model->weights().layers[1].wq;
    EXPECT_EQ(wq.type, t);
    EXPECT_EQ(wq.rows, 64u);
    EXPECT_EQ(wq.cols, 64u);
    EXPECT_EQ(wq.nbytes, 64 * ggml_row_size(t, 64));
    EXPECT_EQ(wq.row(3), wq.data + 3 * ggml_row_size(t, 64));
    const TensorRef& w_down = model->weights().layers[0].w_down;
    ASSERT_EQ(w_down.cols, 96u);
    std::vector<float> row(w_down.cols);
    dequantize_tensor_row(w_down, 63, row.data());
    double sq = 0;
    for (float v : row) sq += v * v;
    EXPECT_GT(sq, 0.0) << ggml_type_name(t);  // builder writes N(0, 0.05) values
    EXPECT_LT(sq, 96 * 0.05 * 0.05 * 4) << ggml_type_name(t);
    EXPECT_EQ(model->weights().layers[0].attn_norm.type, GgmlType::kF32);
  }
}

TEST(LlamaModelErrors, NonLlamaArchitecture) {
  TinyLlamaSpec spec;
  spec.architecture = "qwen2";
  expect_load_error(spec, ErrorCode::kUnsupported, {"qwen2", "not supported", "general.architecture = llama"});
}

TEST(LlamaModelErrors, MissingArchitecture) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.remove("general.architecture"); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"general.architecture", "missing"});
}

TEST(LlamaModelErrors, MissingKey) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.remove("llama.feed_forward_length"); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"llama.feed_forward_length", "missing", "re-convert"});
}

TEST(LlamaModelErrors, KeyOfWrongType) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.block_count", gguf::make_string("two")); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"llama.block_count", "string"});
}

TEST(LlamaModelErrors, AbsurdKeyValue) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.embedding_length", gguf::make_int32(-64)); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"llama.embedding_length", "-64", "out of range"});
}

TEST(LlamaModelErrors, HeadsNotDivisible) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.attention.head_count_kv", gguf::make_uint32(3)); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"head_count 4", "head_count_kv 3"});
}

TEST(LlamaModelErrors, MissingTensor) {
  TinyLlamaSpec spec;
  spec.keep_tensor = [](const std::string& n) { return n != "blk.1.ffn_up.weight"; };
  expect_load_error(spec, ErrorCode::kCorrupt, {"'blk.1.ffn_up.weight' is missing", "re-download or re-convert"});
}

TEST(LlamaModelErrors, WrongShape) {
  TinyLlamaSpec spec;
  spec.edit_tensor = [](const std::string& n, std::vector<uint64_t>& dims, GgmlType&) {
    if (n == "blk.0.attn_k.weight") dims = {64, 48};
  };
  expect_load_error(spec, ErrorCode::kCorrupt, {"'blk.0.attn_k.weight'", "[64, 48]", "expected [64, 32]"});
}

TEST(LlamaModelErrors, UnsupportedMatrixType) {
  TinyLlamaSpec spec;
  spec.edit_tensor = [](const std::string& n, std::vector<uint64_t>&, GgmlType& t) {
    if (n == "blk.1.attn_v.weight") t = GgmlType::kQ5_0;
  };
  expect_load_error(spec, ErrorCode::kUnsupported, {"'blk.1.attn_v.weight'", "q5_0", "q8_0", "llama-quantize"});
}

TEST(LlamaModelErrors, NormWeightsMustBeF32) {
  TinyLlamaSpec spec;
  spec.edit_tensor = [](const std::string& n, std::vector<uint64_t>&, GgmlType& t) {
    if (n == "output_norm.weight") t = GgmlType::kF16;
  };
  expect_load_error(spec, ErrorCode::kUnsupported, {"'output_norm.weight'", "f16", "f32"});
}

TEST(LlamaModelErrors, ExtraLayerTensors) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.block_count", gguf::make_uint32(1)); };
  expect_load_error(spec, ErrorCode::kCorrupt, {"not used by a 1-layer llama model", "blk.1."});
}

TEST(LlamaModelErrors, RopeFreqsTensorUnsupported) {
  TinyLlamaSpec spec;
  spec.extra_f32_tensors = {{"rope_freqs.weight", {8}}};
  expect_load_error(spec, ErrorCode::kUnsupported, {"rope_freqs.weight", "not supported"});
}

TEST(LlamaModelErrors, UnknownExtraTensor) {
  TinyLlamaSpec spec;
  spec.extra_f32_tensors = {{"mystery.weight", {8}}};
  expect_load_error(spec, ErrorCode::kCorrupt, {"1 tensor(s) not used", "'mystery.weight'"});
}

TEST(LlamaModelErrors, LoadNamesThePath) {
  try {
    LlamaModel::load("/nonexistent/dir/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace vks
