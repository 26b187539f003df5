#pragma once
// Vocabularies for synthetic models: a generated SentencePiece-style `llama` vocabulary, or the
// tokenizer keys copied from another GGUF.
#include <cstdint>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vks::tools {

// Minimum synthetic size: <unk> <s> </s>, the 256 byte tokens and at least one piece.
inline constexpr uint32_t kMinSyntheticVocab = 3 + 256 + 1;

// Writes tokenizer.ggml.{model,tokens,scores,token_type,bos/eos/unk ids,add_bos/eos} for n tokens:
// ids 0..2 are <unk> <s> </s>, 3..258 are <0x00>..<0xFF>, then "▁" and printable-ASCII pieces of
// growing length whose scores favour merging. Throws kInvalidArgument below kMinSyntheticVocab.
void add_synthetic_vocab(gguf::GgufWriter& w, uint32_t n);

// Copies every tokenizer.* key of `source` into `w`; returns the vocabulary size (the length of
// tokenizer.ggml.tokens). Throws kInvalidArgument when the source has no token list.
uint32_t copy_vocab(const gguf::GgufFile& source, gguf::GgufWriter& w);

}  // namespace vks::tools
