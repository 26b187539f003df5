// vks-make-model end to end: generated files load as llama models with the requested shapes and
// types, weights have the intended statistics, vocabularies are synthetic or copied intact, and
// output is deterministic.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "engine/cpu/cpu_model.h"
#include "engine/model/llama_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"

namespace vks {
namespace {

namespace fs = std::filesystem;

class MakeModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vks_make_model_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    tool_ = test::build_dir() + "/tools/vks-make-model";
    ASSERT_TRUE(fs::exists(tool_)) << tool_ << " not built";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the tool; returns its exit status and leaves stderr in last_stderr_.
  int make(const std::string& file, const std::string& args) {
    const std::string err = (dir_ / "stderr.txt").string();
    const std::string cmd = "'" + tool_ + "' -q -o '" + path(file) + "' " + args + " 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    const std::vector<char> text = read_all(err);
    last_stderr_.assign(text.begin(), text.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  std::vector<char> bytes(const std::string& file) const { return read_all(path(file)); }
  static std::vector<char> read_all(const std::string& p) {
    std::ifstream in(p, std::ios::binary | std::ios::ate);
    std::vector<char> out(in ? static_cast<size_t>(in.tellg()) : 0);
    in.seekg(0);
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    return out;
  }

  fs::path dir_;
  std::string tool_;
  std::string last_stderr_;
};

struct Stats {
  double mean = 0;
  double std_dev = 0;
};

Stats tensor_stats(const TensorRef& t) {
  std::vector<float> row(t.cols);
  double sum = 0, sum_sq = 0;
  for (uint64_t r = 0; r < t.rows; ++r) {
    dequantize_tensor_row(t, r, row.data());
    for (float v : row) {
      sum += v;
      sum_sq += double(v) * v;
    }
  }
  const double n = double(t.rows) * double(t.cols);
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean))};
}

TEST_F(MakeModel, NewTypesAndRecipesLoadWithExpectedTypes) {
  // dim 256, hidden 512: every K-quant block fits. 8 layers: use_more_bits picks layers 0, 3, 6, 7 (i < 1, i >= 7, (i - 1) % 3 == 2).
  const std::string shape = "--preset tiny --dim 256 --hidden 512 --layers 8 --seed 3 ";
  for (const std::string type : {"q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "mxfp4"}) {
    const std::string file = "t_" + type + ".gguf";
    ASSERT_EQ(make(file, shape + "--type " + type), 0) << last_stderr_;
    const auto model = LlamaModel::load(path(file));
    for (const LayerWeights& l : model->weights().layers) {
      for (const TensorRef* m : {&l.wq, &l.wv, &l.w_down}) {
        EXPECT_EQ(ggml_type_name(m->type), type) << m->name;
        const Stats st = tensor_stats(*m);
        const double want = 1.0 / std::sqrt(double(m->cols));
        // Low-bit types shrink or grow the spread a little; the shape of the data must survive.
        EXPECT_NEAR(st.std_dev, want, want * (type == "q2_K" ? 0.35 : 0.15)) << type << " " << m->name;
      }
    }
  }
  // llama.cpp names a file of MXFP4 matrices MXFP4_MOE (its only MXFP4 file type).
  EXPECT_EQ(LlamaModel::load(path("t_mxfp4.gguf"))->file().get_int("general.file_type"), 38);
  for (const std::string recipe : {"q4_k_m", "q5_k_m"}) {
    const std::string file = "t_" + recipe + ".gguf";
    ASSERT_EQ(make(file, shape + "--type " + recipe), 0) << last_stderr_;
    const auto model = LlamaModel::load(path(file));
    const GgmlType main = recipe == "q4_k_m" ? GgmlType::kQ4_K : GgmlType::kQ5_K;
    EXPECT_EQ(model->file().get_int("general.file_type"), recipe == "q4_k_m" ? 15 : 17);
    EXPECT_EQ(model->weights().output.type, GgmlType::kQ6_K);
    EXPECT_EQ(model->weights().token_embd.type, main);
    const std::set<size_t> more_bits = {0, 3, 6, 7};
    for (size_t i = 0; i < 8; ++i) {
      const LayerWeights& l = model->weights().layers[i];
      const GgmlType expected = more_bits.count(i) ? GgmlType::kQ6_K : main;
      EXPECT_EQ(l.wv.type, expected) << recipe << " layer " << i;
      EXPECT_EQ(l.w_down.type, expected) << recipe << " layer " << i;
      EXPECT_EQ(l.wq.type, main);
      EXPECT_EQ(l.wk.type, main);
      EXPECT_EQ(l.attn_norm.type, GgmlType::kF32);
    }
  }
  // Rows that are not whole K-quant blocks fall back as llama.cpp does (Q4_K -> Q5_0, Q6_K -> Q8_0).
  ASSERT_EQ(make("fallback.gguf", "--preset tiny --dim 96 --heads 4 --hidden 512 --tied --type q4_k_m"), 0) << last_stderr_;
  const auto model = LlamaModel::load(path("fallback.gguf"));
  EXPECT_EQ(model->weights().token_embd.type, GgmlType::kQ8_0);     // tied output: Q6_K, 96 columns
  EXPECT_EQ(model->weights().layers[1].wq.type, GgmlType::kQ5_0);   // 96 columns
  EXPECT_EQ(model->weights().layers[0].w_down.type, GgmlType::kQ4_K);  // 512 columns
  EXPECT_EQ(model->weights().layers[1].w_down.type, GgmlType::kQ6_K);  // 2 layers: the last has more bits
  // --output-type: a Q4_0 file as llama-quantize writes it by default (its output in Q6_K).
  ASSERT_EQ(make("q4_0_llama.gguf", shape + "--type q4_0 --output-type Q6_K"), 0) << last_stderr_;
  const auto q4_0 = LlamaModel::load(path("q4_0_llama.gguf"));
  EXPECT_EQ(q4_0->file().get_int("general.file_type"), 2);
  EXPECT_EQ(q4_0->weights().output.type, GgmlType::kQ6_K);
  EXPECT_EQ(q4_0->weights().token_embd.type, GgmlType::kQ4_0);
  EXPECT_EQ(q4_0->weights().layers[0].w_down.type, GgmlType::kQ4_0);
  // Q2_K, Q3_K and IQ4_XS rows that are no whole 256-blocks fall back to IQ4_NL, as in llama.cpp.
  for (const char* t : {"q2_K", "q3_K", "iq4_xs"}) {
    const std::string name = std::string("fallback_") + t + ".gguf";
    ASSERT_EQ(make(name, "--preset tiny --dim 96 --heads 4 --hidden 512 --tied --type q8_0 --output-type " + std::string(t)), 0)
        << last_stderr_;
    EXPECT_EQ(LlamaModel::load(path(name))->weights().token_embd.type, GgmlType::kIQ4_NL) << t;  // tied: 96 columns
  }
  EXPECT_EQ(make("bad.gguf", shape + "--type q4_0 --output-type q7_K"), 2);
  EXPECT_NE(last_stderr_.find("unknown --output-type 'q7_K'"), std::string::npos) << last_stderr_;
  // A pure K-quant of rows that do not fit is refused, naming the flag.
  EXPECT_EQ(make("bad.gguf", "--preset tiny --type q4_K"), 1);
  EXPECT_NE(last_stderr_.find("--dim 64 is not a multiple of 256"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("bad.gguf", "--preset tiny --type q4_k_s"), 2);
  EXPECT_NE(last_stderr_.find("q4_k_m, q5_k_m"), std::string::npos) << last_stderr_;
}

TEST_F(MakeModel, QwenArchitectures) {
  ASSERT_EQ(make("q2.gguf", "--preset tiny --arch qwen2 --tied"), 0) << last_stderr_;
  const auto qwen2 = LlamaModel::load(path("q2.gguf"));
  EXPECT_EQ(qwen2->config().arch, Arch::kQwen2);
  EXPECT_TRUE(qwen2->config().tied_embeddings);
  ASSERT_TRUE(qwen2->weights().layers[1].bk.has_value());
  const Stats bias = tensor_stats(*qwen2->weights().layers[1].bq);
  EXPECT_NEAR(bias.std_dev, 0.1, 0.03);
  EXPECT_FALSE(qwen2->weights().layers[1].attn_q_norm.has_value());

  ASSERT_EQ(make("q3.gguf", "--preset tiny --arch qwen3 --type q8_0"), 0) << last_stderr_;
  const auto qwen3 = LlamaModel::load(path("q3.gguf"));
  EXPECT_EQ(qwen3->config().arch, Arch::kQwen3);
  ASSERT_TRUE(qwen3->weights().layers[0].attn_k_norm.has_value());
  EXPECT_EQ(qwen3->weights().layers[0].attn_k_norm->cols, 16u);
  EXPECT_FALSE(qwen3->weights().layers[0].bq.has_value());

  EXPECT_EQ(make("x.gguf", "--preset tiny --arch gemma"), 1);
  EXPECT_NE(last_stderr_.find("supported: llama, qwen2, qwen3"), std::string::npos) << last_stderr_;
}

// qwen35 and qwen35moe (Gated DeltaNet layers, gated attention, a gated shared expert) load with the
// layers the interval gives and run on the CPU with finite, non-constant logits.
TEST_F(MakeModel, HybridDeltaNetArchitectures) {
  ASSERT_EQ(make("h.gguf", "--preset qwen35-small --type q8_0"), 0) << last_stderr_;
  ASSERT_EQ(make("hm.gguf", "--preset qwen35-small --arch qwen35moe --experts 4 --experts-used 2 --expert-hidden 64"), 0)
      << last_stderr_;
  for (const char* file : {"h.gguf", "hm.gguf"}) {
    const auto model = LlamaModel::load(path(file));
    const LlamaConfig& c = model->config();
    ASSERT_EQ(c.n_layers, 4u);
    for (uint32_t l = 0; l < 4; ++l) {
      EXPECT_EQ(c.layers[l].mixer, l % 2 == 0 ? Mixer::kDeltaNet : Mixer::kAttention) << file << " layer " << l;
    }
    EXPECT_EQ(c.layers[0].deltanet.head_dim, 64u);
    EXPECT_EQ(c.layers[0].deltanet.n_v_heads, 4u);
    EXPECT_EQ(c.layers[1].attention.rope_dim, 16u);
    // llama.cpp refuses a qwen35 file without M-RoPE's sections (8 roped pairs: the fixtures' 3/3/2).
    const std::string arch = c.arch == Arch::kQwen35Moe ? "qwen35moe" : "qwen35";
    EXPECT_EQ(model->file().get_int_array(arch + ".rope.dimension_sections"), (std::vector<int64_t>{3, 3, 2, 0}))
        << file;
    EXPECT_EQ(c.layers[1].ffn.shared_hidden, c.arch == Arch::kQwen35Moe ? 64u : 0u) << file;
    const Stats a = tensor_stats(model->weights().layers[0].deltanet->a);
    EXPECT_LT(a.mean, -0.3) << "the decay rate must be negative";
    CpuModel cpu(*model, 2, 8);
    std::vector<float> logits;
    for (int32_t pos = 0; pos < 4; ++pos) logits = cpu.forward(1 + pos, pos);
    const Stats s = [&] {
      double sum = 0, sq = 0;
      for (float v : logits) {
        EXPECT_TRUE(std::isfinite(v));
        sum += v;
        sq += double(v) * v;
      }
      const double n = double(logits.size()), m = sum / n;
      return Stats{m, std::sqrt(std::max(0.0, sq / n - m * m))};
    }();
    EXPECT_GT(s.std_dev, 0.1) << file;
  }
}

TEST_F(MakeModel, EveryTypeLoadsWithExpectedShapesAndStatistics) {
  for (const std::string type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    const std::string file = "tiny_" + type + ".gguf";
    ASSERT_EQ(make(file, "--preset tiny --type " + type + " --layers 3 --seed 5"), 0) << last_stderr_;
    const auto model = LlamaModel::load(path(file));
    const LlamaConfig& c = model->config();
    EXPECT_EQ(c.dim, 64u);
    EXPECT_EQ(c.n_layers, 3u);
    EXPECT_EQ(c.n_heads, 4u);
    EXPECT_EQ(c.n_kv_heads, 2u);
    EXPECT_EQ(c.hidden_dim, 192u);
    EXPECT_EQ(c.vocab_size, 512u);
    EXPECT_EQ(c.context_length, 256u);
    EXPECT_FALSE(c.tied_embeddings);
    const LlamaWeights& w = model->weights();
    const GgmlType expected = model->weights().token_embd.type;
    EXPECT_EQ(ggml_type_name(expected), type);
    for (const LayerWeights& l : w.layers) {
      for (const TensorRef* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        EXPECT_EQ(m->type, expected) << m->name;
        const Stats s = tensor_stats(*m);
        const double want = 1.0 / std::sqrt(double(m->cols));
        EXPECT_NEAR(s.mean, 0.0, want * 0.1) << type << " " << m->name;
        EXPECT_NEAR(s.std_dev, want, want * 0.12) << type << " " << m->name;
      }
      for (const TensorRef* n : {&l.attn_norm, &l.ffn_norm}) {
        EXPECT_EQ(n->type, GgmlType::kF32);
        const Stats s = tensor_stats(*n);
        EXPECT_NEAR(s.mean, 1.0, 0.01) << n->name;
        EXPECT_NEAR(s.std_dev, 0.02, 0.008) << n->name;
      }
    }
    EXPECT_EQ(w.output.name, "output.weight");
    const gguf::GgufFile& f = model->file();
    const int64_t file_type = *f.get_int("general.file_type");
    EXPECT_EQ(file_type, type == "f32" ? 0 : type == "f16" ? 1 : type == "q4_0" ? 2 : type == "q8_0" ? 7 : 32);
  }
}

TEST_F(MakeModel, LlamaCppKeysAndSyntheticVocabulary) {
  ASSERT_EQ(make("m.gguf", "--dim 96 --heads 6 --kv-heads 2 --hidden 160 --layers 1 --vocab 700 --context 333 "
                           "--rope-base 50000 --norm-eps 1e-6 --tied --name custom"),
            0)
      << last_stderr_;
  const auto model = LlamaModel::load(path("m.gguf"));
  const LlamaConfig& c = model->config();
  EXPECT_EQ(c.dim, 96u);
  EXPECT_EQ(c.head_dim, 16u);
  EXPECT_EQ(c.kv_dim(), 32u);
  EXPECT_EQ(c.hidden_dim, 160u);
  EXPECT_EQ(c.vocab_size, 700u);
  EXPECT_EQ(c.context_length, 333u);
  EXPECT_FLOAT_EQ(c.rope_freq_base, 50000.0f);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-6f);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.name, "custom");
  const gguf::GgufFile& f = model->file();
  EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 16);
  EXPECT_EQ(f.get_int("llama.vocab_size"), 700);
  EXPECT_EQ(f.get_int("general.alignment"), 32);
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);

  const auto tokens = *f.get_string_array("tokenizer.ggml.tokens");
  const auto types = *f.get_int_array("tokenizer.ggml.token_type");
  const auto scores = *f.get_float_array("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 700u);
  ASSERT_EQ(types.size(), 700u);
  ASSERT_EQ(scores.size(), 700u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[3 + 0x41], "<0x41>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(tokens[259], "\xE2\x96\x81");
  EXPECT_EQ((std::vector<int64_t>{types[0], types[1], types[3], types[300]}), (std::vector<int64_t>{2, 3, 6, 1}));
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size());
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 2);
  // Every multi-symbol piece can be made by merging a known piece with one more letter.
  const std::set<std::string> vocab(tokens.begin(), tokens.end());
  for (size_t k = 260; k < tokens.size(); ++k) {
    if (tokens[k].size() > 1 && tokens[k] != "\xE2\x96\x81") {
      EXPECT_TRUE(vocab.count(tokens[k].substr(0, tokens[k].size() - 1))) << tokens[k];
    }
  }
}

TEST_F(MakeModel, VocabFromKeepsTheVocabulary) {
  const std::string source = test::model_path("llama2-vocab.gguf");
  ASSERT_EQ(make("v.gguf", "--preset tiny --type q8_0 --vocab-from '" + source + "'"), 0) << last_stderr_;
  const auto model = LlamaModel::load(path("v.gguf"));
  EXPECT_EQ(model->config().vocab_size, 32000u);
  EXPECT_EQ(model->weights().token_embd.rows, 32000u);
  const gguf::GgufFile src = gguf::GgufFile::open(source);
  const gguf::GgufFile& out = model->file();
  size_t copied = 0;
  for (const gguf::KeyValue& kv : src.metadata()) {
    if (kv.key.rfind("tokenizer.ggml.", 0) != 0) continue;
    ++copied;
    ASSERT_NE(out.find(kv.key), nullptr) << kv.key;
  }
  EXPECT_GE(copied, 6u);
  EXPECT_EQ(out.get_string_array("tokenizer.ggml.tokens"), src.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(out.get_float_array("tokenizer.ggml.scores"), src.get_float_array("tokenizer.ggml.scores"));
  EXPECT_EQ(out.get_int_array("tokenizer.ggml.token_type"), src.get_int_array("tokenizer.ggml.token_type"));
  EXPECT_EQ(out.get_int("tokenizer.ggml.bos_token_id"), src.get_int("tokenizer.ggml.bos_token_id"));
  EXPECT_EQ(out.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(out.get_int("llama.vocab_size"), 32000);
}

TEST_F(MakeModel, VocabFromSaysWhenItOverrides) {
  const std::string source = test::model_path("llama2-vocab.gguf");
  const std::string cmd = "'" + tool_ + "' -o '" + path("o.gguf") + "' --vocab 1000 --vocab-from '" + source + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_NE(out.find("vocabulary size 32000"), std::string::npos) << out;
  EXPECT_NE(out.find("overrides 1000"), std::string::npos) << out;
}

TEST_F(MakeModel, DeterministicAcrossRunsAndThreads) {
  ASSERT_EQ(make("a.gguf", "--type q4_0 --seed 9 --threads 1"), 0);
  ASSERT_EQ(make("b.gguf", "--type q4_0 --seed 9 --threads 2"), 0);
  ASSERT_EQ(make("c.gguf", "--type q4_0 --seed 10"), 0);
  EXPECT_EQ(bytes("a.gguf"), bytes("b.gguf"));
  EXPECT_NE(bytes("a.gguf"), bytes("c.gguf"));
  EXPECT_EQ(bytes("a.gguf").size(), bytes("c.gguf").size());
}

TEST_F(MakeModel, BadArgumentsFailClearly) {
  EXPECT_EQ(make("x.gguf", "--type q8_0 --dim 80 --heads 4 --kv-heads 2"), 1);
  EXPECT_NE(last_stderr_.find("--dim 80 is not a multiple of 32"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--type q5_k_l"), 2);
  EXPECT_NE(last_stderr_.find("unknown --type"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--preset huge"), 2);
  EXPECT_NE(last_stderr_.find("tinyllama-1.1b"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--heads 3"), 1);
  EXPECT_NE(last_stderr_.find("--heads 3"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--vocab 100"), 1);
  EXPECT_NE(last_stderr_.find("at least 260"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--vocab-from /nonexistent.gguf"), 1);
  EXPECT_NE(last_stderr_.find("/nonexistent.gguf"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--tied --untied"), 2);
}

// --memorize: after any token of the text, in any context, the model's argmax is the token the text
// follows it by (where that is one token: a token the text follows by several is left to the
// random weights), across a pass through the text and in a greedy continuation of a random
// prompt; the file carries the text. Refused without --vocab-from and with tied embeddings.
TEST_F(MakeModel, MemorizedTextIsContinuedGreedily) {
  const std::string vocab = test::model_path("llama2-vocab.gguf");
  const std::string text = "The lighthouse keeper climbed ninety steps every evening to light the lamp.";
  {
    std::ofstream(path("text.txt")) << text;
  }
  ASSERT_EQ(make("m.gguf", "--preset tiny --dim 256 --heads 4 --kv-heads 2 --hidden 512 --layers 3 --type q4_0 --untied "
                           "--vocab-from '" + vocab + "' --memorize '" + path("text.txt") + "'"),
            0)
      << last_stderr_;
  const auto model = LlamaModel::load(path("m.gguf"));
  EXPECT_EQ(model->file().get_string("vkstream.synthetic.memorized_text"), text);
  const std::vector<int32_t> ids = Tokenizer::from_gguf(model->file())->encode(text, false);
  ASSERT_GE(ids.size(), 12u);
  std::map<int32_t, std::set<int32_t>> next;
  for (size_t i = 0; i < ids.size(); ++i) next[ids[i]].insert(ids[(i + 1) % ids.size()]);
  auto argmax = [](const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
  CpuModel cpu(*model, 2, 256);
  int32_t pos = 0, checked = 0;
  for (const int32_t id : {7, 19000, 4242}) cpu.forward(id, pos++);  // a random context before the text
  for (const int32_t id : ids) {
    const int32_t predicted = argmax(cpu.forward(id, pos++));
    if (next[id].size() != 1) continue;
    EXPECT_EQ(predicted, *next[id].begin()) << "after token " << id << " at " << pos;
    ++checked;
  }
  EXPECT_GE(checked, static_cast<int32_t>(ids.size()) - 4);
  // Greedy after a random prompt that ends in one token of the text: the text follows.
  CpuModel greedy(*model, 2, 256);
  int32_t p = 0, unique_steps = 0;
  for (const int32_t id : {1, 12345, 777}) greedy.forward(id, p++);
  for (int32_t token = ids[3]; p < 30; ++p) {
    const int32_t out = argmax(greedy.forward(token, p));
    if (next[token].size() == 1) {
      EXPECT_EQ(out, *next[token].begin()) << "at " << p;
      ++unique_steps;
    }
    token = out;
  }
  EXPECT_GE(unique_steps, 20);

  EXPECT_EQ(make("x.gguf", "--preset tiny --untied --memorize '" + path("text.txt") + "'"), 2);
  EXPECT_NE(last_stderr_.find("--memorize needs --vocab-from"), std::string::npos) << last_stderr_;
  EXPECT_EQ(make("x.gguf", "--preset tiny --dim 256 --tied --vocab-from '" + vocab + "' --memorize '" + path("text.txt") + "'"), 1);
  EXPECT_NE(last_stderr_.find("needs untied embeddings"), std::string::npos) << last_stderr_;
  {
    std::ofstream(path("empty.txt")) << "";
  }
  EXPECT_EQ(make("x.gguf", "--preset tiny --untied --vocab-from '" + vocab + "' --memorize '" + path("empty.txt") + "'"), 1);
  EXPECT_NE(last_stderr_.find("two tokens or more"), std::string::npos) << last_stderr_;
}

// Gemma 3 and gpt-oss files load with the windows, rope bases, sinks, biases and expert types asked
// for, and a tied Gemma's random weights give sane logits (finite, std of a few units, no echo of
// the input token).
TEST_F(MakeModel, WindowedArchitectures) {
  const std::string small = "--dim 64 --heads 2 --kv-heads 1 --head-dim 32 --hidden 64 --vocab 300 --context 512 ";
  ASSERT_EQ(make("g3.gguf", "--preset gemma3-small --layers 6 --window 16 " + small), 0) << last_stderr_;
  const auto g3 = LlamaModel::load(path("g3.gguf"));
  const LlamaConfig& c = g3->config();
  EXPECT_EQ(c.architecture, "gemma3");
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_FLOAT_EQ(c.embedding_scale, 8.0f);  // sqrt(64)
  for (uint32_t l = 0; l < 6; ++l) {  // default period 6: layers 0-4 local (base 10000), layer 5 global (1e6)
    EXPECT_EQ(c.layers[l].attention.window, l < 5 ? 16u : 0u) << l;
    EXPECT_FLOAT_EQ(c.layers[l].attention.rope_base, l < 5 ? 10000.0f : 1e6f) << l;
    EXPECT_TRUE(c.layers[l].post_norms);
    const LayerWeights& w = g3->weights().layers[l];
    EXPECT_TRUE(w.attn_q_norm && w.attn_k_norm && w.post_attn_norm && w.post_ffn_norm);
  }
  EXPECT_NEAR(tensor_stats(g3->weights().output_norm).mean, 16.0, 0.5);
  EXPECT_NEAR(tensor_stats(*g3->weights().layers[0].post_ffn_norm).mean, 2.0, 0.1);
  {
    CpuModel cpu(*g3, 1, 8);
    int echoes = 0;
    for (int32_t pos = 0; pos < 8; ++pos) {
      const int32_t token = 3 + 37 * pos;
      const std::vector<float>& logits = cpu.forward(token, pos);
      double sum = 0, sum_sq = 0;
      size_t best = 0;
      for (size_t i = 0; i < logits.size(); ++i) {
        ASSERT_TRUE(std::isfinite(logits[i]));
        sum += logits[i];
        sum_sq += double(logits[i]) * logits[i];
        if (logits[i] > logits[best]) best = i;
      }
      const double mean = sum / logits.size(), sd = std::sqrt(sum_sq / logits.size() - mean * mean);
      EXPECT_GT(sd, 1.0) << pos;
      EXPECT_LT(sd, 20.0) << pos;
      echoes += best == static_cast<size_t>(token);
    }
    EXPECT_LT(echoes, 4);
  }
  // An explicit period and local rope base, and gemma2's soft-caps.
  ASSERT_EQ(make("g3p.gguf", "--preset gemma3-small --layers 4 --window 8 --window-period 2 --rope-base-swa 5000 " + small), 0)
      << last_stderr_;
  const LlamaConfig c2 = LlamaModel::load(path("g3p.gguf"))->config();
  for (uint32_t l = 0; l < 4; ++l) {
    EXPECT_EQ(c2.layers[l].attention.window, l % 2 == 0 ? 8u : 0u) << l;
    EXPECT_FLOAT_EQ(c2.layers[l].attention.rope_base, l % 2 == 0 ? 5000.0f : 1e6f) << l;
  }
  ASSERT_EQ(make("g2.gguf", "--preset gemma2-small --layers 2 --attn-softcap 5 " + small), 0) << last_stderr_;
  const LlamaConfig g2 = LlamaModel::load(path("g2.gguf"))->config();
  EXPECT_FLOAT_EQ(g2.layers[0].attention.softcap, 5.0f);
  EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
  EXPECT_EQ(g2.layers[0].attention.window, 128u);
  EXPECT_EQ(g2.layers[1].attention.window, 0u);

  // gemma4 from a gemma3 preset: its layer output scales (1) and the keys and tensors llama.cpp
  // requires of it: the window pattern as a per-layer array, the window layers' sizes, the global
  // layers' rope factors (all 1).
  ASSERT_EQ(make("g4.gguf", "--preset gemma3-small --arch gemma4 --layers 6 --window 16 " + small), 0) << last_stderr_;
  const auto g4 = LlamaModel::load(path("g4.gguf"));
  for (uint32_t l = 0; l < 6; ++l) {
    EXPECT_EQ(g4->config().layers[l].attention.window, l < 5 ? 16u : 0u) << l;
    ASSERT_TRUE(g4->weights().layers[l].output_scale.has_value()) << l;
    EXPECT_EQ(tensor_stats(*g4->weights().layers[l].output_scale).mean, 1.0) << l;
  }
  EXPECT_EQ(g4->file().get_int_array("gemma4.attention.sliding_window_pattern"),
            (std::vector<int64_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(g4->file().get_int("gemma4.attention.key_length_swa"), 32);
  EXPECT_EQ(g4->file().get_int("gemma4.attention.shared_kv_layers"), 0);
  ASSERT_NE(g4->file().find_tensor("rope_freqs.weight"), nullptr);
  EXPECT_EQ(g4->file().find_tensor("rope_freqs.weight")->dims[0], 16u);

  ASSERT_EQ(make("oss.gguf", "--preset gpt-oss-small --layers 3 --window 8 --experts 4 --experts-used 2 "
                             "--expert-hidden 32 " + small), 0) << last_stderr_;
  const auto oss = LlamaModel::load(path("oss.gguf"));
  const LlamaConfig& o = oss->config();
  EXPECT_EQ(o.architecture, "gpt-oss");
  EXPECT_FALSE(o.tied_embeddings);
  EXPECT_EQ(oss->file().get_int("general.file_type"), 38);  // MOSTLY_MXFP4_MOE
  EXPECT_EQ(o.rope_scaling, "yarn");
  EXPECT_FLOAT_EQ(o.yarn.factor, 32.0f);
  EXPECT_EQ(o.yarn.original_context, 4096u);
  for (uint32_t l = 0; l < 3; ++l) {
    EXPECT_EQ(o.layers[l].attention.window, l % 2 == 0 ? 8u : 0u) << l;
    EXPECT_TRUE(o.layers[l].attention.sinks);
    EXPECT_EQ(o.layers[l].ffn.n_experts, 4u);
    const LayerWeights& w = oss->weights().layers[l];
    EXPECT_TRUE(w.attn_sinks && w.bq && w.bk && w.bv && w.bo && w.router_bias && w.b_gate && w.b_up && w.b_down);
    EXPECT_EQ(w.w_gate.type, GgmlType::kMXFP4);
    EXPECT_EQ(w.w_down.type, GgmlType::kMXFP4);
    EXPECT_EQ(w.wq.type, GgmlType::kQ8_0);
    EXPECT_FALSE(w.post_ffn_norm);
  }
  {
    CpuModel cpu(*oss, 1, 4);
    for (int32_t pos = 0; pos < 4; ++pos) {
      for (const float v : cpu.forward(5 + pos, pos)) ASSERT_TRUE(std::isfinite(v));
    }
  }
  // Windows only where the architecture has them.
  EXPECT_EQ(make("bad.gguf", "--preset tiny --window 8"), 1);
  EXPECT_NE(last_stderr_.find("llama has no sliding windows"), std::string::npos) << last_stderr_;
}

}  // namespace
}  // namespace vks
