#pragma once
// A model file's quantization as people name it ("Q4_K_M", "Q8_0", "F16"): what Ollama reports as
// quantization_level and llama.cpp prints as the file type.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"

namespace vks::gguf {

// The name of a general.file_type value (llama.cpp's llama_ftype enum, Ollama's spelling), or ""
// for a value that enum does not have (5 and 6 were removed from it; negative or newer values).
std::string_view llama_file_type_name(int64_t file_type);

// general.file_type's name when the file has a known one; otherwise the type that holds most of
// the file's matrix (2-D and larger) weights ("Q8_0"; llama.cpp counts tensors of each type
// instead, norms included); "" with neither.
std::string model_quantization(const GgufFile& file);

}  // namespace vks::gguf
