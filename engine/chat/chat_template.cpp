#include "engine/chat/chat_template.h"

#include "engine/chat/json_value.h"
#include "engine/common/error.h"

namespace vks::chat {

const std::string& ChatTemplate::chatml_source() {
  static const std::string kChatml =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
      "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
  return kChatml;
}

ChatTemplate ChatTemplate::parse(std::string source, std::optional<std::string> bos_token,
                                 std::optional<std::string> eos_token) {
  ChatTemplate t;
  t.template_ = jinja::Template::parse(source);
  t.source_ = std::move(source);
  t.bos_ = std::move(bos_token);
  t.eos_ = std::move(eos_token);
  return t;
}

ChatTemplate ChatTemplate::chatml(std::optional<std::string> bos_token, std::optional<std::string> eos_token) {
  return parse(chatml_source(), std::move(bos_token), std::move(eos_token));
}

std::string ChatTemplate::render_values(jinja::Value messages, bool add_generation_prompt,
                                        const jinja::Value::Dict* extra, const jinja::RenderLimits& limits) const {
  jinja::Value::Dict vars;
  if (extra != nullptr) vars = *extra;
  vars.set("messages", std::move(messages));
  vars.set("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  if (bos_) vars.set("bos_token", jinja::Value::string(*bos_));
  if (eos_) vars.set("eos_token", jinja::Value::string(*eos_));
  return template_.render(vars, limits);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const jinja::RenderLimits& limits) const {
  jinja::Value::List list;
  list.reserve(messages.size());
  for (const auto& m : messages) {
    jinja::Value::Dict d;
    d.set("role", jinja::Value::string(m.role));
    d.set("content", jinja::Value::string(m.content));
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  return render_values(jinja::Value::list(std::move(list)), add_generation_prompt, nullptr, limits);
}

std::string ChatTemplate::render_json(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                      const nlohmann::ordered_json& extra, const jinja::RenderLimits& limits) const {
  if (!messages.is_array()) throw vks::Error(ErrorCode::kInvalidArgument, "messages must be a JSON array");
  for (const auto& m : messages) {
    if (!m.is_object()) throw vks::Error(ErrorCode::kInvalidArgument, "each message must be a JSON object");
  }
  if (!extra.is_object()) throw vks::Error(ErrorCode::kInvalidArgument, "extra template variables must be a JSON object");
  const jinja::Value extra_value = jinja::value_from_json(extra);
  return render_values(jinja::value_from_json(messages), add_generation_prompt, &extra_value.as_dict(), limits);
}

void ChatTemplate::validate() const {
  // Some templates refuse a system message (raise_exception), so a template passes when any of
  // these renders.
  const std::vector<std::vector<ChatMessage>> samples = {
      {{"system", "You are helpful."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}},
      {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}},
  };
  // Tighter than a request's render: this runs before the daemon is ready, and a sample
  // conversation needs a tiny fraction of these (time: the default 2 s).
  jinja::RenderLimits limits;
  limits.max_steps = 1'000'000;
  limits.max_alloc_bytes = uint64_t{64} << 20;
  std::optional<jinja::TemplateError> first_error;
  for (const auto& sample : samples) {
    try {
      render(sample, true, limits);
      return;
    } catch (const jinja::TemplateError& e) {
      if (!first_error) first_error = e;
    }
  }
  throw *first_error;
}

}  // namespace vks::chat
