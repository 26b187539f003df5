// libFuzzer target for the tool-call parser: any bytes as a model's answer, in each format; no
// crash, and the answer fed in two pieces (cut where the first byte says) or byte by byte parses
// exactly as the whole answer.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/chat/tool_call_parser.h"

namespace {

vks::chat::ToolCallFormat format_for(uint8_t selector) {
  vks::chat::ToolCallFormat f = vks::chat::generic_tool_format();
  switch (selector % 3) {
    case 1:  // Llama 3.1 style
      f.open.clear();
      f.close.clear();
      f.args_key = "parameters";
      f.parallel = false;
      break;
    case 2:  // Mistral style
      f.open = "[TOOL_CALLS]";
      f.close.clear();
      f.array = true;
      break;
    default: break;
  }
  return f;
}

vks::chat::ToolParse run(const vks::chat::ToolCallFormat& f, std::string_view text, size_t step) {
  vks::chat::ToolCallParser parser(f);
  vks::chat::ToolParse all;
  for (size_t at = 0; at < text.size(); at += step) {
    vks::chat::ToolParse piece;
    parser.feed(text.substr(at, step), piece);
    all.text += piece.text;
    all.calls.insert(all.calls.end(), piece.calls.begin(), piece.calls.end());
  }
  vks::chat::ToolParse rest;
  parser.finish(rest);
  all.text += rest.text;
  all.calls.insert(all.calls.end(), rest.calls.begin(), rest.calls.end());
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const vks::chat::ToolCallFormat f = format_for(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const vks::chat::ToolParse whole = run(f, text, text.size() + 1);
  if (!(run(f, text, 1) == whole)) __builtin_trap();
  if (!(run(f, text, 1 + data[0] % 7) == whole)) __builtin_trap();
  return 0;
}
