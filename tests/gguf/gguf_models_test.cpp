// The shared real models parse, with the metadata and tensors their README describes.
#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "tests/common/test_models.h"

namespace vks::gguf {
namespace {

TEST(GgufModels, Stories260KParses) {
  const GgufFile f = GgufFile::open(test::model_path("stories260K.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);  // no general.alignment key: the default
  EXPECT_EQ(f.find("general.alignment"), nullptr);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.find("llama.rope.freq_base"), nullptr);
  EXPECT_NE(f.find("tokenizer.ggml.seperator_token_id"), nullptr);
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ(tokens->size(), 512u);
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type")->size(), 512u);
  ASSERT_EQ(f.tensors().size(), 48u);
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, GgmlType::kF32);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(embd->nbytes, 64u * 512u * 4u);
  EXPECT_EQ(f.tensor_data(*embd).size(), embd->nbytes);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_LE(f.data_offset() + t.offset + t.nbytes, f.file_size()) << t.name;
  }
  const TensorInfo* ffn = f.find_tensor("blk.0.ffn_gate.weight");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->dims, (std::vector<uint64_t>{64, 172}));
}

TEST(GgufModels, AidreamsParses) {
  const GgufFile f = GgufFile::open(test::model_path("aidreams260K.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), 4);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 4);
  EXPECT_EQ(f.get_int("llama.context_length"), 128);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 512u);
}

TEST(GgufModels, VocabOnlyFileParses) {
  const GgufFile f = GgufFile::open(test::model_path("llama2-vocab.gguf"));
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
}

TEST(GgufModels, TypedLookupsRejectWrongTypes) {
  const GgufFile f = GgufFile::open(test::model_path("stories260K.gguf"));
  EXPECT_THROW(f.get_int("general.architecture"), Error);
  EXPECT_THROW(f.get_string("llama.block_count"), Error);
  EXPECT_THROW(f.get_string_array("tokenizer.ggml.scores"), Error);
  EXPECT_THROW(f.get_float_array("tokenizer.ggml.tokens"), Error);
  EXPECT_FALSE(f.get_int("no.such.key").has_value());
}

TEST(GgufModels, MissingFileIsNotFound) {
  try {
    GgufFile::open(test::model_path("does-not-exist.gguf"));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("does-not-exist.gguf"), std::string::npos);
  }
}

TEST(GgufModels, DirectoryIsIoError) {
  try {
    GgufFile::open(test::models_dir());
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

}  // namespace
}  // namespace vks::gguf
