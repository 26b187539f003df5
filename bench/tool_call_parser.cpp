// Per-token cost of the incremental tool-call parser (engine/chat/tool_call_parser.h), the work the
// HTTP front end adds to every token of a chat answer with tools on: an answer of prose followed
// by calls, fed in token-sized pieces (`--piece` bytes, ~4 = an average BPE token) to a fresh
// parser per answer, for the generic/Qwen, Llama 3.1 and Mistral formats, whole calls and with
// arguments streamed as fragments (what the streamed chat, Messages and Responses surfaces do).
// Also the one-off cost of learning a template's format by rendering probes (at load).
// With --vocab GGUF (e.g. qwen2-vocab.gguf): the tool-call grammar's cost per token on that
// vocabulary, the engine's per-token work for a constrained request (the allowed-token mask, its
// application to a vocabulary's logits, the advance by the chosen token), for tool_choice
// "none" (no grammar), "auto" (the lazy grammar: prose, then a call) and "required" (a call from
// the first token), over a 128-token answer the grammar accepts: the first request on a fresh
// grammar table (masks computed) and the next ones (masks shared from the table).
//   tool_call_parser [--iters 2000] [--piece 4] [--calls 3] [--vocab GGUF] [--requests 20]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "engine/chat/tool_call_parser.h"
#include "engine/chat/tool_format.h"
#include "engine/chat/tool_grammar.h"
#include "engine/gguf/gguf_file.h"
#include "engine/grammar/compile.h"
#include "engine/grammar/token_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string answer_for(const vks::chat::ToolCallFormat& f, int calls) {
  std::string prose;
  for (int i = 0; i < 8; ++i) prose += "Let me look that up for you, with {braces} and <tags> in the text. ";
  std::string call_json;
  std::vector<std::string> objects;
  for (int i = 0; i < calls; ++i) {
    const std::string name = f.name_key, args = f.args_key;
    objects.push_back("{\"" + name + "\": \"get_weather_" + std::to_string(i) + "\", \"" + args +
                      "\": {\"city\": \"Paris \\\"centre\\\"\", \"days\": " + std::to_string(i + 1) +
                      ", \"units\": {\"temp\": \"c\", \"wind\": [\"kmh\", \"beaufort\"]}}}");
  }
  if (f.open.empty()) return objects[0];  // JSON at the start: one call, no prose
  if (f.array) {
    std::string out = prose + f.open + "[";
    for (size_t i = 0; i < objects.size(); ++i) out += (i ? ", " : "") + objects[i];
    return out + "]";
  }
  std::string out = prose;
  for (const std::string& o : objects) out += f.open + "\n" + o + "\n" + f.close + "\n";
  return out;
}

// Two tools, the schemas of the e2e tests.
const char* kTools = R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
    "city":{"enum":["Paris","Rome"]},"days":{"type":"integer","minimum":1,"maximum":9}},"required":["city","days"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"set_alarm","parameters":{"type":"object","properties":{"loud":{"type":"boolean"}},
    "required":["loud"],"additionalProperties":false}}}])";

// The tokens of one answer the grammar accepts: `prose` (free text, tokenized) then, from the
// grammar, a seeded walk over the allowed tokens (the shortest ones preferred, as a model's call
// is written token by token) until the grammar must end or `length` tokens.
std::vector<vks::TokenId> accepted_answer(const vks::Tokenizer& tok, const std::shared_ptr<vks::grammar::GrammarTable>& table,
                                          const std::string& prose, size_t length) {
  vks::grammar::TokenConstraint c(table);
  std::vector<vks::TokenId> out;
  for (vks::TokenId id : tok.encode(prose, false)) {
    if (out.size() >= length || !c.accept(id)) break;
    out.push_back(id);
  }
  std::mt19937 rng(7);
  const std::vector<vks::TokenId>& ends = table->index().end_tokens();
  while (out.size() < length && !c.must_end()) {
    const vks::grammar::TokenMask& mask = c.allowed();
    std::vector<vks::TokenId> allowed;
    for (vks::TokenId id = 0; id < tok.vocab_size(); ++id) {
      if (vks::grammar::mask_has(mask, id) && std::find(ends.begin(), ends.end(), id) == ends.end()) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    std::sort(allowed.begin(), allowed.end(), [&](vks::TokenId a, vks::TokenId b) {
      return tok.token_bytes(a).size() < tok.token_bytes(b).size();
    });
    allowed.resize(std::min<size_t>(allowed.size(), 8));
    const vks::TokenId id = allowed[rng() % allowed.size()];
    if (!c.accept(id)) break;
    out.push_back(id);
  }
  return out;
}

// Per token: the mask, applied to the logits, and the advance; `requests` fresh constraints on one
// table (the first computes the masks; requests with the same grammar share the table).
void grammar_cost(const vks::Tokenizer& tok, const char* choice, const std::string& gbnf, const std::string& prose,
                  int requests) {
  auto index = std::make_shared<vks::grammar::TokenIndex>(tok);
  auto table = [&] { return std::make_shared<vks::grammar::GrammarTable>(vks::grammar::compile_constraint(gbnf, {}), index); };
  const std::vector<vks::TokenId> answer = accepted_answer(tok, table(), prose, 128);
  std::vector<float> logits(static_cast<size_t>(tok.vocab_size()), 0.0f);
  auto shared = table();
  double first_ns = 0, rest_ns = 0;
  for (int r = 0; r < requests; ++r) {
    const auto start = Clock::now();
    vks::grammar::TokenConstraint c(shared);
    for (vks::TokenId id : answer) {
      if (c.apply(logits) == 0 || !c.accept(id)) {
        std::printf("%s: token rejected\n", choice);
        return;
      }
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    (r == 0 ? first_ns : rest_ns) += ns;
  }
  const double n = static_cast<double>(answer.size());
  std::printf("%-9s %7zu %14.2f %14.2f\n", choice, answer.size(), first_ns / n / 1e3,
              requests > 1 ? rest_ns / (requests - 1) / n / 1e3 : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 2000;
  int piece = 4;
  int calls = 3;
  int requests = 20;
  std::string vocab;
  CLI::App app{"tool-call parser cost per token"};
  app.add_option("--vocab", vocab, "a GGUF whose vocabulary the grammar cost is measured on");
  app.add_option("--requests", requests, "constrained answers per tool_choice (grammar cost)")->check(CLI::Range(1, 100000));
  app.add_option("--iters", iters)->check(CLI::Range(1, 10000000));
  app.add_option("--piece", piece, "bytes per fed piece (a token)")->check(CLI::Range(1, 4096));
  app.add_option("--calls", calls)->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);

  vks::chat::ToolCallFormat llama;
  llama.native = true;
  llama.open.clear();
  llama.close.clear();
  llama.args_key = "parameters";
  vks::chat::ToolCallFormat mistral;
  mistral.native = true;
  mistral.open = "[TOOL_CALLS]";
  mistral.close.clear();
  mistral.array = true;
  const std::pair<const char*, vks::chat::ToolCallFormat> formats[] = {
      {"qwen", vks::chat::generic_tool_format()}, {"llama3.1", llama}, {"mistral", mistral}};

  std::printf("%-9s %-9s %8s %7s %7s %12s %12s\n", "format", "arguments", "bytes", "pieces", "calls", "ns/piece", "MB/s");
  for (const bool streamed : {false, true})
  for (const auto& [name, format] : formats) {
    const std::string answer = answer_for(format, calls);
    size_t found = 0;
    const auto start = Clock::now();
    for (int it = 0; it < iters; ++it) {
      vks::chat::ToolCallParser parser(format);
      parser.stream_arguments(streamed);
      vks::chat::ToolParse out;
      for (size_t at = 0; at < answer.size(); at += static_cast<size_t>(piece)) {
        parser.feed(std::string_view(answer).substr(at, static_cast<size_t>(piece)), out);
      }
      parser.finish(out);
      found += out.calls.size();
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    const double pieces = static_cast<double>((answer.size() + piece - 1) / piece) * iters;
    std::printf("%-9s %-9s %8zu %7.0f %7zu %12.1f %12.1f\n", name, streamed ? "fragments" : "whole", answer.size(), pieces / iters,
                found / static_cast<size_t>(iters),
                ns / pieces, static_cast<double>(answer.size()) * iters / (ns / 1e9) / 1e6);
  }

  // Learning a format: three probe renderings of the template, once at load.
  const auto tmpl = vks::chat::ChatTemplate::chatml("<s>", "</s>");
  const auto start = Clock::now();
  const int probes = std::max(1, iters / 20);
  for (int i = 0; i < probes; ++i) (void)vks::chat::detect_tool_format(tmpl);
  std::printf("detect_tool_format (ChatML): %.1f us\n",
              std::chrono::duration<double, std::micro>(Clock::now() - start).count() / probes);

  if (vocab.empty()) return 0;
  const auto tok = vks::Tokenizer::from_gguf(vks::gguf::GgufFile::open(vocab));
  const auto specs = vks::chat::parse_tools(nlohmann::ordered_json::parse(kTools));
  const vks::chat::ToolCallFormat qwen = vks::chat::generic_tool_format();
  std::string prose;
  for (int i = 0; i < 4; ++i) prose += "Let me look that up for you, with {braces} and <tags> in the text. ";
  std::printf("\ngrammar per token, vocabulary of %d (%s); tool_choice none has no grammar\n", tok->vocab_size(), vocab.c_str());
  std::printf("%-9s %7s %14s %14s\n", "choice", "tokens", "first us/tok", "shared us/tok");
  grammar_cost(*tok, "auto", vks::chat::tool_call_lazy_gbnf(qwen, specs, true), prose, requests);
  grammar_cost(*tok, "required", vks::chat::tool_call_gbnf(qwen, specs, true), "", requests);
  return 0;
}
