#include "engine/chat/model_chat_template.h"

#include <fstream>
#include <sstream>

#include "engine/chat/jinja_budget.h"
#include "engine/common/error.h"

namespace vks::chat {
namespace {

constexpr size_t kMaxTemplateBytes = size_t{1} << 20;
// Every render of one template at load together: validate()'s samples, the tool-call and reasoning
// probes. Each render alone has 2 s, and a template slow only when `tools` is defined made the
// several probes add up before the daemon was ready; a real template needs well under 10 ms.
constexpr std::chrono::milliseconds kLoadRenderTime{2'000};

}  // namespace

std::optional<std::string> gguf_token_text(const gguf::GgufFile& file, std::string_view id_key) {
  const std::optional<int64_t> id = file.get_int(id_key);
  const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
  if (!id || tokens == nullptr || tokens->type != gguf::ValueType::kArray || *id < 0 ||
      static_cast<uint64_t>(*id) >= tokens->arr.size()) {
    return std::nullopt;
  }
  const gguf::Value& token = tokens->arr[static_cast<size_t>(*id)];
  if (token.type != gguf::ValueType::kString) return std::nullopt;
  return token.s;
}

std::optional<std::string> gguf_chat_template_source(const gguf::GgufFile& file) {
  return file.get_string("tokenizer.chat_template");
}

std::string read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw vks::Error(ErrorCode::kIo, "cannot read chat template file " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > kMaxTemplateBytes) throw vks::Error(ErrorCode::kInvalidArgument, "chat template file " + path + " is over 1 MiB");
  return text;
}

namespace {

ModelChatTemplate with_tool_format(ModelChatTemplate t) {
  t.tool_format = detect_tool_format(t.tmpl);
  t.reasoning = detect_reasoning_format(t.tmpl);
  t.request_templates = std::make_shared<RequestTemplateCache>();
  return t;
}

}  // namespace

ModelChatTemplate load_model_chat_template(const gguf::GgufFile& file, const std::string& template_file) {
  const std::optional<std::string> bos = gguf_token_text(file, "tokenizer.ggml.bos_token_id");
  const std::optional<std::string> eos = gguf_token_text(file, "tokenizer.ggml.eos_token_id");
  if (!template_file.empty()) {
    try {
      jinja::RenderScope probes(kLoadRenderTime, nullptr);
      ChatTemplate t = ChatTemplate::parse(read_template_file(template_file), bos, eos);
      t.validate();
      return with_tool_format({std::move(t), "file " + template_file, "", {}, {}, nullptr});
    } catch (const vks::Error& e) {
      throw vks::Error(e.code(), "chat template " + template_file + ": " + e.what());
    }
  }
  std::string reason;
  if (const auto source = gguf_chat_template_source(file)) {
    try {
      jinja::RenderScope probes(kLoadRenderTime, nullptr);
      ChatTemplate t = ChatTemplate::parse(*source, bos, eos);
      t.validate();
      return with_tool_format({std::move(t), "model", "", {}, {}, nullptr});
    } catch (const vks::Error& e) {
      reason = std::string("the model's chat template cannot be used (") + e.what() + ")";
    }
  } else {
    reason = "the model has no tokenizer.chat_template";
  }
  return with_tool_format({ChatTemplate::chatml(bos, eos), "ChatML fallback", reason, {}, {}, nullptr});
}

}  // namespace vks::chat
