#pragma once
// Splits input text around special-token strings before the tokenizer model runs, as llama.cpp's
// tokenizer_st_partition does: user-defined tokens always, control and unknown tokens only when
// parse_special is set. Longer special strings are split out first.
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace vks {

struct TextFragment {
  TokenId token = -1;     // >= 0: a special token taken verbatim
  std::string_view text;  // otherwise: raw text for the model (never empty); views the input
};

std::vector<TextFragment> split_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special);

}  // namespace vks
