#include "engine/gguf/file_type.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/gguf/ggml_type.h"

namespace vks::gguf {

namespace {

struct FileTypeName {
  int64_t value;
  std::string_view name;
};

// llama.h's llama_ftype up to MXFP4_MOE (38), in the spelling of Ollama's fileType names: 5 and 6
// (Q4_2, Q4_3) and 33-35 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) were removed from llama.cpp. Newer Ollama
// reuses 4 for MXFP4 in its own gpt-oss files, an architecture vkstream refuses anyway.
constexpr FileTypeName kFileTypes[] = {
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},     {4, "Q4_1_F16"},  {7, "Q8_0"},
    {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"},  {12, "Q3_K_M"},   {13, "Q3_K_L"},
    {14, "Q4_K_S"},  {15, "Q4_K_M"},  {16, "Q5_K_S"}, {17, "Q5_K_M"},  {18, "Q6_K"},     {19, "IQ2_XXS"},
    {20, "IQ2_XS"},  {21, "Q2_K_S"},  {22, "IQ3_XS"}, {23, "IQ3_XXS"}, {24, "IQ1_S"},    {25, "IQ4_NL"},
    {26, "IQ3_S"},   {27, "IQ3_M"},   {28, "IQ2_S"},  {29, "IQ2_M"},   {30, "IQ4_XS"},   {31, "IQ1_M"},
    {32, "BF16"},    {36, "TQ1_0"},   {37, "TQ2_0"},  {38, "MXFP4_MOE"},
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string_view llama_file_type_name(int64_t file_type) {
  for (const FileTypeName& f : kFileTypes) {
    if (f.value == file_type) return f.name;
  }
  return {};
}

std::string model_quantization(const GgufFile& file) {
  // Informational only: a key of another type or an unknown value falls back to the guess.
  if (const Value* v = file.find("general.file_type"); v != nullptr && v->type != ValueType::kBool) {
    if (const auto value = v->as_int()) {
      if (const std::string_view name = llama_file_type_name(*value); !name.empty()) return std::string(name);
    }
  }
  // Norms and biases are 1-D and F32 in every file, so only matrices say how it was quantized.
  std::map<GgmlType, uint64_t> weights_by_type;
  for (const TensorInfo& t : file.tensors()) {
    if (t.dims.size() >= 2) weights_by_type[t.type] += t.n_elements();
  }
  if (weights_by_type.empty()) return {};
  const auto most = std::max_element(weights_by_type.begin(), weights_by_type.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  return upper(ggml_type_name(most->first));
}

}  // namespace vks::gguf
