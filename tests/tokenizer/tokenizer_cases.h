#pragma once
// Reads llama.cpp's tokenizer test cases: strings separated by lines "__ggml_vocab_test__" and one
// line of space-separated ids per string (without BOS).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_models.h"

namespace vks::test {

struct TokenizerCase {
  std::string text;
  std::vector<TokenId> ids;
};

inline std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `path_stem` + ".txt" holds the strings, `path_stem` + ".ids" their ids.
inline std::vector<TokenizerCase> load_tokenizer_cases_at(const std::string& path_stem) {
  const std::string text = read_whole_file(path_stem + ".txt");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<TokenizerCase> cases;
  for (size_t start = 0;;) {
    const size_t end = text.find(sep, start);
    if (end == std::string::npos) break;
    cases.push_back({text.substr(start, end - start), {}});
    start = end + sep.size();
  }
  std::istringstream ids(read_whole_file(path_stem + ".ids"));
  std::string line;
  for (size_t i = 0; std::getline(ids, line); ++i) {
    if (i >= cases.size()) break;
    std::istringstream ls(line);
    for (TokenId id; ls >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

// `stem` like "llama3-bpe-tokenizer-cases" under models_dir()/reference.
inline std::vector<TokenizerCase> load_tokenizer_cases(const std::string& stem) {
  return load_tokenizer_cases_at(model_path("reference/") + stem);
}

inline std::string show_tokens(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::string s;
  for (const TokenId id : ids) s += std::to_string(id) + "'" + std::string(tok.token_text(id)) + "' ";
  return s;
}

}  // namespace vks::test
