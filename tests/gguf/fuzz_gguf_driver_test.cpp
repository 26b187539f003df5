// Drives the libFuzzer target with deterministic mutations of valid seeds, so the fuzz target runs
// in every build (g++, ASan) without clang. VKS_FUZZ_ITERATIONS / VKS_FUZZ_SEED override the run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>

#include "engine/gguf/gguf_writer.h"
#include "tests/common/test_models.h"
#include "tests/gguf/gguf_mutator.h"
#include "tests/model/tiny_llama_gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace vks::test {
namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::strtoull(v, nullptr, 10) : fallback;
}

std::vector<std::vector<uint8_t>> seeds() {
  std::vector<std::vector<uint8_t>> out;
  TinyLlamaSpec f32;
  f32.dim = 32; f32.n_heads = 2; f32.n_kv_heads = 1; f32.hidden = 32; f32.vocab = 8; f32.n_layers = 1;
  out.push_back(build_tiny_llama(f32));
  TinyLlamaSpec q4 = f32;
  q4.matrix_type = GgmlType::kQ4_0;
  q4.tied = true;
  out.push_back(build_tiny_llama(q4));
  TinyLlamaSpec q8 = f32;
  q8.matrix_type = GgmlType::kQ8_0;
  out.push_back(build_tiny_llama(q8));
  // The architectures' optional tensors and the newer legacy types.
  TinyLlamaSpec qwen2 = f32;
  qwen2.architecture = "qwen2";
  qwen2.matrix_type = GgmlType::kQ5_0;
  qwen2.extra_f32_tensors = {{"blk.0.attn_q.bias", {32}}, {"blk.0.attn_k.bias", {16}}, {"blk.0.attn_v.bias", {16}}};
  out.push_back(build_tiny_llama(qwen2));
  TinyLlamaSpec qwen3 = f32;
  qwen3.architecture = "qwen3";
  qwen3.matrix_type = GgmlType::kQ5_1;
  qwen3.extra_f32_tensors = {{"blk.0.attn_q_norm.weight", {16}}, {"blk.0.attn_k_norm.weight", {16}}};
  out.push_back(build_tiny_llama(qwen3));
  TinyLlamaSpec llama3 = f32;
  llama3.matrix_type = GgmlType::kQ4_1;
  llama3.extra_f32_tensors = {{"rope_freqs.weight", {8}}};
  out.push_back(build_tiny_llama(llama3));

  gguf::GgufWriter meta;
  meta.set_alignment(16);
  meta.set("a", gguf::make_array(gguf::ValueType::kArray, {gguf::make_int32_array({1, 2}), gguf::make_string_array({"s"})}));
  meta.set("b", gguf::make_float64(1.0));
  meta.set("c", gguf::make_bool(false));
  meta.add_tensor("t", GgmlType::kF16, {4, 2});
  out.push_back(meta.to_bytes({std::vector<uint8_t>(16, 0x3C)}));
  return out;
}

TEST(FuzzGgufDriver, MutatedSmallSeeds) {
  const uint64_t iterations = env_or("VKS_FUZZ_ITERATIONS", 12000);
  std::mt19937_64 rng(env_or("VKS_FUZZ_SEED", 1));
  const auto corpus = seeds();
  for (const auto& s : corpus) LLVMFuzzerTestOneInput(s.data(), s.size());
  for (uint64_t iter = 0; iter < iterations; ++iter) {
    std::vector<uint8_t> input = corpus[rng() % corpus.size()];
    const int n_mutations = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n_mutations; ++k) mutate(input, rng);
    // An exact-size heap copy, so ASan sees reads past the end.
    const std::vector<uint8_t> copy(input);
    ASSERT_EQ(LLVMFuzzerTestOneInput(copy.data(), copy.size()), 0);
  }
}

TEST(FuzzGgufDriver, MutatedStoriesHeader) {
  std::ifstream in(model_path("stories260K.gguf"), std::ios::binary);
  const std::vector<uint8_t> stories{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_GT(stories.size(), 0u);
  std::mt19937_64 rng(env_or("VKS_FUZZ_SEED", 1) + 1);
  const uint64_t iterations = env_or("VKS_FUZZ_ITERATIONS", 12000) / 24;
  for (uint64_t iter = 0; iter < iterations; ++iter) {
    std::vector<uint8_t> input = stories;
    const int n_mutations = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n_mutations; ++k) mutate(input, rng);
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

}  // namespace
}  // namespace vks::test
