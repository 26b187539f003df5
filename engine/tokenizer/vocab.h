#pragma once
// The vocabulary part of a GGUF's tokenizer.ggml.* keys, shared by every tokenizer model
// (SentencePiece `llama`, byte-level BPE `gpt2`): token strings, scores, types, merges, special ids.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks {

struct Vocab {
  std::string model;                 // tokenizer.ggml.model ("llama", "gpt2", ...)
  std::string pre;                   // tokenizer.ggml.pre (BPE pre-tokenizer name; may be empty)
  std::vector<std::string> tokens;   // [n] tokenizer.ggml.tokens
  std::vector<float> scores;         // [n] tokenizer.ggml.scores (0 when absent)
  std::vector<TokenType> types;      // [n] tokenizer.ggml.token_type (kNormal when absent)
  std::unordered_map<std::string, TokenId> text_to_id;  // a repeated string maps to its last id,
                                                        // as in llama.cpp
  std::vector<std::string> merges;   // tokenizer.ggml.merges ("left right", rank = index), BPE only
  std::array<TokenId, 256> byte_to_id{};  // "<0xNN>" token of each byte (-1 when missing)

  // Special ids (-1 = none). Defaults are llama.cpp's (SPM: 1/2/0; BPE: bos = eos = 11, no unk);
  // a key naming an id outside the vocabulary is ignored, as llama.cpp does.
  TokenId bos = 1, eos = 2, unk = 0, eot = -1, eom = -1, pad = -1, sep = -1;
  bool add_bos = true;           // tokenizer.ggml.add_bos_token (BPE default: per pre-tokenizer)
  bool add_eos = false;          // tokenizer.ggml.add_eos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix

  // End-of-generation ids, ascending: EOS, EOT, EOM and every token whose text llama.cpp treats
  // as an end of turn (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...).
  // build_indexes() fills it (and eot/eom when their keys are absent) and marks those tokens CONTROL.
  std::vector<TokenId> eog_ids;
  const std::vector<TokenId>& end_of_generation_ids() const { return eog_ids; }
  bool is_eog(TokenId id) const;

  // Control, user-defined and unknown tokens, longest text first: the strings split out of the
  // input before the model runs (control and unknown only when parsing special tokens).
  std::vector<TokenId> special_tokens;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool valid(TokenId id) const { return id >= 0 && id < size(); }
  TokenId find(const std::string& text) const {
    const auto it = text_to_id.find(text);
    return it == text_to_id.end() ? -1 : it->second;
  }

  // Throws vks::Error(kCorrupt) naming the key for missing or inconsistent keys.
  static Vocab from_gguf(const gguf::GgufFile& file);
  // Builds the lookup tables from tokens/scores/types (used by from_gguf and by tests).
  void build_indexes();

 private:
  void detect_end_of_generation();
};

}  // namespace vks
