// A file's quantization name: general.file_type when it names a known llama_ftype, else the type of
// most matrix weights (1-D tensors never count), else "".
#include <gtest/gtest.h>

#include "engine/gguf/file_type.h"
#include "engine/gguf/gguf_writer.h"

namespace vks::gguf {
namespace {

// A file holding the given tensors (zero bytes) and, when file_type is set, general.file_type.
GgufFile file_with(const std::vector<std::pair<GgmlType, std::vector<uint64_t>>>& tensors,
                   std::optional<Value> file_type = std::nullopt) {
  GgufWriter w;
  w.set("general.architecture", make_string("llama"));
  if (file_type) w.set("general.file_type", *file_type);
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = w.add_tensor("t" + std::to_string(i), tensors[i].first, tensors[i].second);
    data.emplace_back(t.nbytes, 0);
  }
  return GgufFile::parse(w.to_bytes(data));
}

TEST(FileType, NamesLlamaCppsEnumInOllamasSpelling) {
  // llama.h's enum llama_ftype, 0 .. 40, "" where it has no value (removed, or newer than the table).
  const std::vector<std::string_view> want = {
      "F32",    "F16",    "Q4_0",   "Q4_1",    "Q4_1_F16", "",       "",         "Q8_0",   "Q5_0",
      "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M",  "Q3_K_L",   "Q4_K_S", "Q4_K_M",   "Q5_K_S", "Q5_K_M",
      "Q6_K",   "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS",   "IQ3_XXS", "IQ1_S",   "IQ4_NL", "IQ3_S",
      "IQ3_M",  "IQ2_S",  "IQ2_M",  "IQ4_XS",  "IQ1_M",    "BF16",   "",         "",       "",
      "TQ1_0",  "TQ2_0",  "MXFP4_MOE", "",     ""};
  ASSERT_EQ(want.size(), 41u);
  for (size_t v = 0; v < want.size(); ++v) EXPECT_EQ(llama_file_type_name(static_cast<int64_t>(v)), want[v]) << v;
  for (int64_t unknown : {-1, 1024, 1 << 20}) EXPECT_EQ(llama_file_type_name(unknown), "") << unknown;
}

TEST(FileType, FileTypeKeyWins) {
  // The key names the recipe (Q4_K_M) even though most weights here are Q6_K.
  const GgufFile f = file_with({{GgmlType::kQ6_K, {256, 8}}, {GgmlType::kQ4_K, {256, 2}}}, make_uint32(15));
  EXPECT_EQ(model_quantization(f), "Q4_K_M");
}

TEST(FileType, GuessedFromMostMatrixWeightsWithoutAUsableKey) {
  const std::vector<std::pair<GgmlType, std::vector<uint64_t>>> tensors = {
      {GgmlType::kF32, {4096}},       // a norm: 1-D, never counted however large
      {GgmlType::kQ8_0, {64, 32}},    // 2,048 weights
      {GgmlType::kF16, {64, 16}},     // 1,024
      {GgmlType::kQ8_0, {32, 4, 2}},  // 256 more Q8_0
  };
  EXPECT_EQ(model_quantization(file_with(tensors)), "Q8_0");
  EXPECT_EQ(model_quantization(file_with(tensors, make_uint32(99))), "Q8_0");      // unknown value
  EXPECT_EQ(model_quantization(file_with(tensors, make_uint32(5))), "Q8_0");       // removed value
  EXPECT_EQ(model_quantization(file_with(tensors, make_string("Q4_K_M"))), "Q8_0");  // not an integer
  EXPECT_EQ(model_quantization(file_with(tensors, make_bool(true))), "Q8_0");        // nor a bool (not 1: F16)
  EXPECT_EQ(model_quantization(file_with({{GgmlType::kF32, {64, 8}}, {GgmlType::kQ4_K, {256, 4}}})), "Q4_K");
}

TEST(FileType, EmptyWithoutMatricesOrKey) {
  EXPECT_EQ(model_quantization(file_with({})), "");
  EXPECT_EQ(model_quantization(file_with({{GgmlType::kF32, {64}}})), "");
  EXPECT_EQ(model_quantization(file_with({{GgmlType::kF32, {64}}}, make_uint32(0))), "F32");
}

}  // namespace
}  // namespace vks::gguf
