// `vkstream template`: renders a conversation with a chat template, in-process, and prints the
// prompt exactly (no newline added), for debugging templates (like llama.cpp's /apply-template).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "engine/chat/model_chat_template.h"
#include "engine/common/error.h"

namespace vks::cli {
namespace {

struct TemplateArgs {
  std::string model;
  std::string template_file;
  std::optional<std::string> bos;
  std::optional<std::string> eos;
  std::string messages_file;
  bool add_generation_prompt = false;
};

nlohmann::ordered_json read_json_file(const std::string& path) {
  std::string text;
  if (path == "-") {
    text = read_all_stdin();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw vks::Error(ErrorCode::kIo, "cannot read " + path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw vks::Error(ErrorCode::kInvalidArgument, path + ": not valid JSON: " + e.what());
  }
}

int run_template(const TemplateArgs& a) {
  chat::ChatTemplate tmpl = [&] {
    if (!a.template_file.empty()) return chat::ChatTemplate::parse(chat::read_template_file(a.template_file), a.bos, a.eos);
    const gguf::GgufFile file = gguf::GgufFile::open(a.model);
    const auto source = chat::gguf_chat_template_source(file);
    if (!source) throw vks::Error(ErrorCode::kNotFound, a.model + " has no tokenizer.chat_template");
    return chat::ChatTemplate::parse(*source, a.bos ? a.bos : chat::gguf_token_text(file, "tokenizer.ggml.bos_token_id"),
                                     a.eos ? a.eos : chat::gguf_token_text(file, "tokenizer.ggml.eos_token_id"));
  }();
  // Either a list of messages, or an object {"messages": [...], other template variables...}.
  nlohmann::ordered_json doc = read_json_file(a.messages_file);
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  nlohmann::ordered_json messages;
  if (doc.is_object()) {
    if (!doc.contains("messages")) throw vks::Error(ErrorCode::kInvalidArgument, a.messages_file + ": no \"messages\"");
    messages = doc["messages"];
    doc.erase("messages");
    extra = std::move(doc);
  } else {
    messages = std::move(doc);
  }
  std::cout << tmpl.render_json(messages, a.add_generation_prompt, extra) << std::flush;
  return kExitOk;
}

}  // namespace

void add_template_command(CLI::App& root, int& exit_code) {
  auto args = std::make_shared<TemplateArgs>();
  CLI::App* sub = root.add_subcommand("template", "Render a conversation with a chat template (no daemon needed)");
  auto* model = sub->add_option("--model", args->model, "GGUF whose tokenizer.chat_template to use");
  auto* file = sub->add_option("--template-file", args->template_file, "Jinja template file");
  model->excludes(file);
  file->excludes(model);
  sub->add_option("--bos", args->bos, "bos_token text (default: the model's; undefined with --template-file)");
  sub->add_option("--eos", args->eos, "eos_token text (default: the model's; undefined with --template-file)");
  sub->add_option("--messages", args->messages_file,
                  "JSON file ('-' for stdin): a list of {role, content}, or {\"messages\": [...], other variables}")
      ->required();
  sub->add_flag("--add-generation-prompt", args->add_generation_prompt, "end with the assistant turn's header");
  sub->callback([args, &exit_code] {
    if (args->model.empty() && args->template_file.empty()) {
      print_error("template: give --model FILE.gguf or --template-file T.jinja");
      exit_code = kExitUsage;
      return;
    }
    exit_code = guarded("template", [&] { return run_template(*args); });
  });
}

}  // namespace vks::cli
