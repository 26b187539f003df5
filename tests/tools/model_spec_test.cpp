// Presets carry the real models' shapes; spec validation names the offending flag.
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "tools/make_model/model_spec.h"

namespace vks::tools {
namespace {

TEST(ModelSpecPresets, RealShapes) {
  const ModelSpec t = *preset("tinyllama-1.1b");
  EXPECT_EQ(t.dim, 2048u);
  EXPECT_EQ(t.n_layers, 22u);
  EXPECT_EQ(t.n_heads, 32u);
  EXPECT_EQ(t.n_kv_heads, 4u);
  EXPECT_EQ(t.hidden_dim, 5632u);
  EXPECT_EQ(t.vocab_size, 32000u);
  EXPECT_EQ(t.context_length, 2048u);
  EXPECT_FALSE(t.tied_embeddings);
  EXPECT_NEAR(t.n_parameters() / 1e9, 1.10, 0.01);

  const ModelSpec s = *preset("smollm2-135m");
  EXPECT_EQ(s.dim, 576u);
  EXPECT_EQ(s.n_layers, 30u);
  EXPECT_EQ(s.n_heads, 9u);
  EXPECT_EQ(s.n_kv_heads, 3u);
  EXPECT_EQ(s.hidden_dim, 1536u);
  EXPECT_EQ(s.vocab_size, 49152u);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 100000.0f);
  EXPECT_TRUE(s.tied_embeddings);
  EXPECT_NEAR(s.n_parameters() / 1e6, 134.5, 1.0);

  const ModelSpec l = *preset("llama-3.2-1b");
  EXPECT_EQ(l.dim, 2048u);
  EXPECT_EQ(l.n_layers, 16u);
  EXPECT_EQ(l.n_kv_heads, 8u);
  EXPECT_EQ(l.hidden_dim, 8192u);
  EXPECT_EQ(l.vocab_size, 128256u);
  EXPECT_FLOAT_EQ(l.rope_freq_base, 500000.0f);
  EXPECT_TRUE(l.tied_embeddings);
  EXPECT_NEAR(l.n_parameters() / 1e9, 1.24, 0.01);

  EXPECT_EQ(preset("tiny")->dim, 64u);
  EXPECT_FALSE(preset("nope").has_value());
  for (const std::string& name : preset_names()) {
    ModelSpec p = *preset(name);
    for (GgmlType type : {GgmlType::kF32, GgmlType::kQ4_0, GgmlType::kQ8_0}) {
      p.type = type;
      EXPECT_NO_THROW(validate(p)) << name;
    }
  }
}

TEST(ModelSpecValidate, NamesTheFlag) {
  ModelSpec s = *preset("tiny");
  s.n_kv_heads = 3;
  try {
    validate(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--kv-heads 3"), std::string::npos) << e.what();
  }
  s = *preset("tiny");
  s.type = GgmlType::kQ4_0;
  s.hidden_dim = 100;
  EXPECT_THROW(validate(s), Error);
  s.type = GgmlType::kF16;
  EXPECT_NO_THROW(validate(s));
  s.dim = 0;
  EXPECT_THROW(validate(s), Error);
}

TEST(ModelSpecTypes, ParseAndFileType) {
  EXPECT_EQ(parse_weight_type("Q4_0"), GgmlType::kQ4_0);
  EXPECT_EQ(parse_weight_type("bf16"), GgmlType::kBF16);
  EXPECT_EQ(parse_weight_type("q5_1"), GgmlType::kQ5_1);
  EXPECT_FALSE(parse_weight_type("iq4_nl").has_value());  // a known type without a quantizer
  EXPECT_FALSE(parse_weight_type("q9_9").has_value());
  EXPECT_EQ(llama_file_type(GgmlType::kQ8_0), 7u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ4_0), 2u);
  EXPECT_EQ(llama_file_type(GgmlType::kF16), 1u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ6_K), 18u);
  EXPECT_THROW(llama_file_type(GgmlType::kIQ4_NL), Error);
}

}  // namespace
}  // namespace vks::tools
