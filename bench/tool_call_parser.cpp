// Per-token cost of the incremental tool-call parser (engine/chat/tool_call_parser.h), the work the
// HTTP front end adds to every token of a chat answer with tools on: an answer of prose followed
// by calls, fed in token-sized pieces (`--piece` bytes, ~4 = an average BPE token) to a fresh
// parser per answer, for the generic/Qwen, Llama 3.1 and Mistral formats. Also the one-off cost of
// learning a template's format by rendering probes (at load).
//   tool_call_parser [--iters 2000] [--piece 4] [--calls 3]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "engine/chat/tool_call_parser.h"
#include "engine/chat/tool_format.h"

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

}  // namespace

int main(int argc, char** argv) {
  int iters = 2000;
  int piece = 4;
  int calls = 3;
  CLI::App app{"tool-call parser cost per token"};
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

  std::printf("%-9s %8s %7s %7s %12s %12s\n", "format", "bytes", "pieces", "calls", "ns/piece", "MB/s");
  for (const auto& [name, format] : formats) {
    const std::string answer = answer_for(format, calls);
    size_t found = 0;
    const auto start = Clock::now();
    for (int it = 0; it < iters; ++it) {
      vks::chat::ToolCallParser parser(format);
      vks::chat::ToolParse out;
      for (size_t at = 0; at < answer.size(); at += static_cast<size_t>(piece)) {
        parser.feed(std::string_view(answer).substr(at, static_cast<size_t>(piece)), out);
      }
      parser.finish(out);
      found += out.calls.size();
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    const double pieces = static_cast<double>((answer.size() + piece - 1) / piece) * iters;
    std::printf("%-9s %8zu %7.0f %7zu %12.1f %12.1f\n", name, answer.size(), pieces / iters, found / static_cast<size_t>(iters),
                ns / pieces, static_cast<double>(answer.size()) * iters / (ns / 1e9) / 1e6);
  }

  // Learning a format: three probe renderings of the template, once at load.
  const auto tmpl = vks::chat::ChatTemplate::chatml("<s>", "</s>");
  const auto start = Clock::now();
  const int probes = std::max(1, iters / 20);
  for (int i = 0; i < probes; ++i) (void)vks::chat::detect_tool_format(tmpl);
  std::printf("detect_tool_format (ChatML): %.1f us\n",
              std::chrono::duration<double, std::micro>(Clock::now() - start).count() / probes);
  return 0;
}
