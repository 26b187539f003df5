// Presets carry the real models' shapes; spec validation names the offending flag.
#include <gtest/gtest.h>

#include <set>

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
  EXPECT_EQ(l.recipe, Recipe::kQ4_K_M);
  EXPECT_EQ(llama_file_type(l), 15u);

  const ModelSpec q = *preset("qwen2.5-0.5b");
  EXPECT_EQ(q.architecture, "qwen2");
  EXPECT_EQ(q.dim, 896u);
  EXPECT_EQ(q.n_layers, 24u);
  EXPECT_EQ(q.n_heads, 14u);
  EXPECT_EQ(q.n_kv_heads, 2u);
  EXPECT_EQ(q.head_dim(), 64u);
  EXPECT_EQ(q.hidden_dim, 4864u);
  EXPECT_EQ(q.vocab_size, 151936u);
  EXPECT_TRUE(q.tied_embeddings);
  EXPECT_EQ(q.recipe, Recipe::kQ4_K_M);
  // Qwen2.5-0.5B-Instruct-Q4_K_M.gguf as llama.cpp writes it: 896-wide rows cannot hold 256-blocks.
  EXPECT_EQ(matrix_type(q, "token_embd.weight", 896), GgmlType::kQ8_0);
  EXPECT_EQ(matrix_type(q, "blk.0.attn_q.weight", 896), GgmlType::kQ5_0);
  EXPECT_EQ(matrix_type(q, "blk.0.ffn_down.weight", 4864), GgmlType::kQ6_K);
  EXPECT_EQ(matrix_type(q, "blk.3.ffn_down.weight", 4864), GgmlType::kQ4_K);  // 24 layers: 0-2, 5, 8, ..., 21-23

  const ModelSpec g = *preset("gemma3-1b");  // Gemma 3 1B: 1.0B parameters, 302M of them the tied embedding
  EXPECT_EQ(g.architecture, "gemma3");
  EXPECT_EQ(g.head_dim(), 256u);
  EXPECT_EQ(g.window, 512u);
  EXPECT_TRUE(g.tied_embeddings);
  EXPECT_NEAR(g.n_parameters() / 1e9, 1.0, 0.01);
  EXPECT_EQ(matrix_type(g, "token_embd.weight", 1152), GgmlType::kQ8_0);  // Q6_K does not fit 1152 columns
  EXPECT_EQ(matrix_type(g, "blk.0.ffn_down.weight", 6912), GgmlType::kQ4_0);
  // gpt-oss-20b: 20.9B parameters; 4.2B active as counted here, both embedding matrices included
  // (OpenAI's 3.6B leaves out the input embedding).
  const ModelSpec o = *preset("gpt-oss-20b");
  EXPECT_NEAR(o.n_parameters() / 1e9, 20.9, 0.2);
  EXPECT_NEAR(o.n_active_parameters() / 1e9, 4.19, 0.05);
  EXPECT_EQ(matrix_type(o, "blk.0.ffn_down_exps.weight", 2880), GgmlType::kMXFP4);
  EXPECT_EQ(matrix_type(o, "blk.0.attn_q.weight", 2880), GgmlType::kQ8_0);
  EXPECT_EQ(llama_file_type(o), 38u);

  EXPECT_EQ(preset("tiny")->dim, 64u);
  EXPECT_FALSE(preset("nope").has_value());
  for (const std::string& name : preset_names()) {
    ModelSpec p = *preset(name);
    EXPECT_NO_THROW(validate(p)) << name;  // with the preset's own types
    p.recipe = Recipe::kPure;
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

TEST(ModelSpecTypes, RecipeFollowsUseMoreBits) {
  ModelSpec s = *preset("tiny");
  s.dim = 256;
  s.hidden_dim = 512;
  s.n_layers = 16;  // use_more_bits: layers 0-1, 14-15, and 4, 7, 10, 13
  s.type = GgmlType::kQ5_K;
  s.recipe = Recipe::kQ5_K_M;
  const std::set<uint32_t> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (uint32_t l = 0; l < 16; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const GgmlType want = more.count(l) ? GgmlType::kQ6_K : GgmlType::kQ5_K;
    EXPECT_EQ(matrix_type(s, b + "attn_v.weight", 256), want) << l;
    EXPECT_EQ(matrix_type(s, b + "ffn_down.weight", 512), want) << l;
    EXPECT_EQ(matrix_type(s, b + "attn_k.weight", 256), GgmlType::kQ5_K) << l;
  }
  EXPECT_EQ(matrix_type(s, "output.weight", 256), GgmlType::kQ6_K);
  EXPECT_EQ(matrix_type(s, "token_embd.weight", 256), GgmlType::kQ5_K);  // untied
  EXPECT_EQ(llama_file_type(s), 17u);
  s.recipe = Recipe::kPure;
  EXPECT_EQ(matrix_type(s, "output.weight", 256), GgmlType::kQ5_K);
}

TEST(ModelSpecTypes, OutputTypeOverridesTheRecipe) {
  ModelSpec s = *preset("tiny");
  s.dim = 256;
  s.type = GgmlType::kQ4_0;
  s.output_type = GgmlType::kQ6_K;
  EXPECT_EQ(matrix_type(s, "output.weight", 256), GgmlType::kQ6_K);
  EXPECT_EQ(matrix_type(s, "token_embd.weight", 256), GgmlType::kQ4_0);  // untied: not the output
  EXPECT_EQ(matrix_type(s, "blk.0.ffn_down.weight", 256), GgmlType::kQ4_0);
  EXPECT_EQ(matrix_type(s, "output.weight", 96), GgmlType::kQ8_0);  // Q6_K's 256-block does not divide 96
  s.tied_embeddings = true;
  EXPECT_EQ(matrix_type(s, "token_embd.weight", 256), GgmlType::kQ6_K);
  s.recipe = Recipe::kQ4_K_M;
  s.type = GgmlType::kQ4_K;
  s.output_type = GgmlType::kQ8_0;
  EXPECT_EQ(matrix_type(s, "token_embd.weight", 256), GgmlType::kQ8_0);
  EXPECT_EQ(matrix_type(s, "blk.1.attn_v.weight", 256), GgmlType::kQ6_K);  // the recipe still holds elsewhere (2 layers: the last has more bits)
}

TEST(ModelSpecTypes, ParseAndFileType) {
  EXPECT_EQ(parse_weight_format("Q4_K_M")->recipe, Recipe::kQ4_K_M);
  EXPECT_EQ(parse_weight_format("q5_k_m")->type, GgmlType::kQ5_K);
  EXPECT_EQ(parse_weight_format("q6_k")->recipe, Recipe::kPure);
  EXPECT_FALSE(parse_weight_format("q4_k_s").has_value());
  EXPECT_EQ(parse_weight_type("Q4_0"), GgmlType::kQ4_0);
  EXPECT_EQ(parse_weight_type("bf16"), GgmlType::kBF16);
  EXPECT_EQ(parse_weight_type("q5_1"), GgmlType::kQ5_1);
  EXPECT_FALSE(parse_weight_type("iq3_s").has_value());  // a known type without a quantizer
  EXPECT_EQ(parse_weight_type("IQ4_XS"), GgmlType::kIQ4_XS);
  EXPECT_FALSE(parse_weight_type("q9_9").has_value());
  EXPECT_EQ(llama_file_type(GgmlType::kQ8_0), 7u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ4_0), 2u);
  EXPECT_EQ(llama_file_type(GgmlType::kF16), 1u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ6_K), 18u);
  EXPECT_EQ(parse_weight_type("MXFP4"), GgmlType::kMXFP4);
  EXPECT_EQ(llama_file_type(GgmlType::kMXFP4), 38u);
  EXPECT_EQ(llama_file_type(GgmlType::kIQ4_NL), 25u);
  EXPECT_EQ(llama_file_type(GgmlType::kIQ4_XS), 30u);
  EXPECT_THROW(llama_file_type(GgmlType::kQ8_1), Error);
}

}  // namespace
}  // namespace vks::tools
