// libFuzzer target for the Jinja interpreter: any bytes as a template must parse or fail with a
// TemplateError, and a parsed template must render or fail with a TemplateError, within the
// render limits (no crash, no hang, bounded output).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const auto tmpl = vks::chat::ChatTemplate::parse(source, "<s>", "</s>");
    vks::jinja::RenderLimits limits;
    limits.max_output_bytes = 1 << 16;
    limits.max_steps = 20'000;
    limits.max_call_depth = 16;
    // Small enough that a hostile input (a list doubled 64 times, issue 37) costs the fuzzer
    // milliseconds, not the 256 MiB and ~1 s of a request's render.
    limits.max_alloc_bytes = uint64_t{8} << 20;
    limits.max_duration = std::chrono::milliseconds(500);
    const std::vector<vks::chat::ChatMessage> messages = {
        {"system", "Be brief."}, {"user", "Hi \xF0\x9F\x98\x80"}, {"assistant", "Hello {{ x }}"}};
    const std::string out = tmpl.render(messages, true, limits);
    if (out.size() > limits.max_output_bytes) __builtin_trap();
  } catch (const vks::jinja::TemplateError&) {
    // expected for most inputs
  }
  return 0;
}
