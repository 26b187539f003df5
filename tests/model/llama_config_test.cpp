// Hyperparameters from llama.* keys with llama.cpp's defaults, and the loader's error messages for
// files built wrong in one way each (missing tensor, wrong shape, unsupported type, other arch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/cpu/reference_ops.h"
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

TEST(LlamaConfig, QuantizationNamesTheFileType) {
  TinyLlamaSpec spec;
  spec.matrix_type = GgmlType::kQ8_0;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("general.file_type", gguf::make_uint32(15)); };
  EXPECT_EQ(load_bytes(test::build_tiny_llama(spec))->config().quantization, "Q4_K_M");
  // A value llama.cpp does not have is no reason to refuse the file: the matrices' type instead.
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("general.file_type", gguf::make_string("fast")); };
  EXPECT_EQ(load_bytes(test::build_tiny_llama(spec))->config().quantization, "Q8_0");
}

TEST(LlamaModelTypes, EverySupportedMatrixTypeLoads) {
  // With the name each file's quantization should get (no general.file_type: its matrices' type).
  const std::pair<GgmlType, const char*> types[] = {
      {GgmlType::kF32, "F32"},   {GgmlType::kF16, "F16"},   {GgmlType::kBF16, "BF16"}, {GgmlType::kQ8_0, "Q8_0"},
      {GgmlType::kQ4_0, "Q4_0"}, {GgmlType::kQ4_1, "Q4_1"}, {GgmlType::kQ5_0, "Q5_0"}, {GgmlType::kQ5_1, "Q5_1"}};
  for (const auto& [t, quantization] : types) {
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
    EXPECT_EQ(model->config().quantization, quantization);
  }
}

TEST(LlamaModelErrors, UnsupportedArchitecture) {
  TinyLlamaSpec spec;
  spec.architecture = "gemma";
  expect_load_error(spec, ErrorCode::kUnsupported, {"'gemma'", "not supported", "supported: llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, gpt-oss, gemma4"});
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
    if (n == "blk.1.attn_v.weight") t = GgmlType::kQ8_1;
  };
  expect_load_error(spec, ErrorCode::kUnsupported,
                    {"'blk.1.attn_v.weight'", "q8_1", "supported: " + supported_ggml_type_names(), "llama-quantize"});
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

TEST(LlamaModelErrors, RopeFreqsOfWrongSize) {
  TinyLlamaSpec spec;
  spec.extra_f32_tensors = {{"rope_freqs.weight", {6}}};  // rope_dim 16: 8 factors
  expect_load_error(spec, ErrorCode::kCorrupt, {"'rope_freqs.weight'", "[6]", "expected [8]"});
}

TEST(LlamaModelErrors, RopeFreqsMustBePositive) {
  // The builder fills F32 vectors with values near 1; a scaling by -1 makes them negative.
  TinyLlamaSpec spec;
  spec.extra_f32_tensors = {{"rope_freqs.weight", {8}}};
  const std::vector<uint8_t> good = test::build_tiny_llama(spec);
  const auto model = load_bytes(good);
  ASSERT_TRUE(model->weights().rope_freqs.has_value());
  EXPECT_EQ(model->weights().rope_freqs->cols, 8u);
  std::vector<uint8_t> bad = good;
  const gguf::TensorInfo* t = model->file().find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  const size_t at = static_cast<size_t>(model->file().data_offset() + t->offset);
  const float minus_one = -1.0f;
  std::memcpy(&bad[at + 4], &minus_one, 4);
  try {
    load_bytes(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("index 1"), std::string::npos) << e.what();
  }
}

TEST(LlamaModelErrors, TensorOfAnotherArchitecture) {
  TinyLlamaSpec spec;
  spec.architecture = "qwen3";
  spec.extra_f32_tensors = {{"rope_freqs.weight", {8}}};
  for (int l = 0; l < 2; ++l) {
    spec.extra_f32_tensors.push_back({"blk." + std::to_string(l) + ".attn_q_norm.weight", {16}});
    spec.extra_f32_tensors.push_back({"blk." + std::to_string(l) + ".attn_k_norm.weight", {16}});
  }
  expect_load_error(spec, ErrorCode::kCorrupt, {"not used by a 2-layer qwen3 model", "'rope_freqs.weight'"});
}

TEST(LlamaArchitectures, Qwen2HasBiasesAndNeoxRope) {
  TinyLlamaSpec spec;
  spec.architecture = "qwen2";
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    spec.extra_f32_tensors.push_back({p + "attn_q.bias", {64}});
    spec.extra_f32_tensors.push_back({p + "attn_k.bias", {32}});
    spec.extra_f32_tensors.push_back({p + "attn_v.bias", {32}});
  }
  const auto model = load_bytes(test::build_tiny_llama(spec));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.arch, Arch::kQwen2);
  EXPECT_EQ(c.architecture, "qwen2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  const LayerWeights& L = model->weights().layers[1];
  ASSERT_TRUE(L.bq && L.bk && L.bv);
  EXPECT_EQ(L.bq->cols, 64u);
  EXPECT_EQ(L.bk->name, "blk.1.attn_k.bias");
  EXPECT_FALSE(L.attn_q_norm.has_value());
  EXPECT_FALSE(model->weights().rope_freqs.has_value());

  // qwen2 requires the biases.
  spec.extra_f32_tensors.pop_back();
  expect_load_error(spec, ErrorCode::kCorrupt, {"'blk.1.attn_v.bias' is missing"});
}

TEST(LlamaArchitectures, Qwen3HasPerHeadQkNorms) {
  TinyLlamaSpec spec;
  spec.architecture = "qwen3";
  for (int l = 0; l < 2; ++l) {
    spec.extra_f32_tensors.push_back({"blk." + std::to_string(l) + ".attn_q_norm.weight", {16}});
    spec.extra_f32_tensors.push_back({"blk." + std::to_string(l) + ".attn_k_norm.weight", {16}});
  }
  const auto model = load_bytes(test::build_tiny_llama(spec));
  EXPECT_EQ(model->config().arch, Arch::kQwen3);
  EXPECT_EQ(model->config().rope_mode, RopeMode::kNeox);
  const LayerWeights& L = model->weights().layers[0];
  ASSERT_TRUE(L.attn_q_norm && L.attn_k_norm);
  EXPECT_EQ(L.attn_k_norm->cols, 16u);
  EXPECT_FALSE(L.bq.has_value());

  spec.extra_f32_tensors[0].second = {8};  // a norm of the wrong size
  expect_load_error(spec, ErrorCode::kCorrupt, {"'blk.0.attn_q_norm.weight'", "expected [16]"});
}

TEST(LlamaArchitectures, LlamaMayHaveBiases) {
  TinyLlamaSpec spec;
  spec.extra_f32_tensors = {{"blk.0.attn_q.bias", {64}}};
  const auto model = load_bytes(test::build_tiny_llama(spec));
  EXPECT_TRUE(model->weights().layers[0].bq.has_value());
  EXPECT_FALSE(model->weights().layers[1].bq.has_value());
  EXPECT_EQ(model->config().rope_mode, RopeMode::kNorm);
}

TEST(LlamaConfig, UnsupportedRopeScalingNamesTheKey) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.rope.scaling.type", gguf::make_string("longrope")); };
  expect_load_error(spec, ErrorCode::kUnsupported, {"'longrope'", "llama.rope.scaling.type", "supported: none, linear, yarn"});
}

// YaRN as llama.cpp's ggml_rope_yarn_corr_dims derives it, on gpt-oss-yarn-tiny's numbers (README:
// head dim 32, base 150000, factor 32 over 4096: pairs 0-4 keep their frequency, 9-15 are divided
// by 32, cos and sin grow by 1 + 0.1 ln 32).
TEST(LlamaConfig, YarnRopeBlendsFrequenciesByRotationCount) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.type", gguf::make_string("yarn"));
    w.set("llama.rope.scaling.factor", gguf::make_float32(32.0f));
    w.set("llama.rope.scaling.original_context_length", gguf::make_uint32(4096));
    w.set("llama.rope.freq_base", gguf::make_float32(150000.0f));
  };
  const auto model = load_bytes(test::build_tiny_llama(spec));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.rope_scaling, "yarn");
  EXPECT_EQ(c.yarn.original_context, 4096u);
  AttentionSpec head32 = c.layers[0].attention;  // the fixture's head size (the correction range depends on it)
  head32.rope_dim = 32;
  const ref::RopeParams p = ref::rope_params(c, head32, nullptr);
  EXPECT_EQ(p.yarn_low, 4.0f);
  EXPECT_EQ(p.yarn_high, 9.0f);
  EXPECT_NEAR(p.mscale_extra, 0.1f * std::log(32.0f), 1e-6f);
  for (size_t i = 0; i < 16; ++i) {
    const float plain = std::pow(150000.0f, -static_cast<float>(2 * i) / 32.0f);
    const float got = ref::rope_frequency(i, p);
    if (i <= 4) {
      EXPECT_FLOAT_EQ(got, plain) << i;
    } else if (i >= 9) {
      EXPECT_FLOAT_EQ(got, plain / 32.0f) << i;
    } else {
      EXPECT_LT(got, plain) << i;
      EXPECT_GT(got, plain / 32.0f) << i;
    }
  }
  EXPECT_EQ(ref::rope_angle_scale(p), 1.0f);
}

// A sliding window for an architecture without windows is refused (the pattern key's period and
// per-layer flags are read in tests/cpu/cpu_fixtures_test.cpp and tests/tools' make_model_test).
TEST(LlamaConfig, SlidingWindowRefusedWhereTheArchitectureHasNone) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.attention.sliding_window", gguf::make_uint32(64)); };
  expect_load_error(spec, ErrorCode::kUnsupported, {"sliding-window attention", "not supported for llama"});
}

// Gemma 4's KV sharing and per-layer inputs are refused for other architectures, naming the key.
TEST(LlamaConfig, KvSharingRefusedWhereTheArchitectureHasNone) {
  TinyLlamaSpec spec;
  spec.edit_metadata = [](gguf::GgufWriter& w) { w.set("llama.attention.shared_kv_layers", gguf::make_uint32(2)); };
  expect_load_error(spec, ErrorCode::kUnsupported, {"llama.attention.shared_kv_layers = 2", "not supported for llama"});
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
