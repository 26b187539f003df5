// Render time of a 50-message conversation (system + alternating user/assistant, ~60-300 bytes
// each) with the llama3, qwen2.5 and ChatML templates of reference/chat-templates.json: the cost a
// chat request pays before tokenization.
//   chat_template_render [--templates ../shared/models/reference/chat-templates.json] [--messages 50] [--iters 2000]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"

int main(int argc, char** argv) {
  std::string path = "../shared/models/reference/chat-templates.json";
  if (const char* models = std::getenv("VKSTREAM_MODELS")) path = std::string(models) + "/reference/chat-templates.json";
  int messages = 50;
  int iters = 2000;
  CLI::App app{"chat template render time"};
  app.add_option("--templates", path, "reference/chat-templates.json");
  app.add_option("--messages", messages)->check(CLI::Range(1, 100000));
  app.add_option("--iters", iters)->check(CLI::Range(1, 10000000));
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto cases = nlohmann::ordered_json::parse(buffer.str());

  std::vector<vks::chat::ChatMessage> conversation = {{"system", "You are a helpful assistant. Answer briefly."}};
  for (int i = 1; i < messages; ++i) {
    std::string content = (i % 2 == 1 ? "Question " : "Answer ") + std::to_string(i) + ": ";
    for (int k = 0; k < 1 + i % 5; ++k) content += "the quick brown fox jumps over the lazy dog, \"quoted\" {braces} \xE2\x80\x94 ";
    conversation.push_back({i % 2 == 1 ? "user" : "assistant", content});
  }
  if (conversation.back().role != "user") conversation.push_back({"user", "And finally?"});

  std::printf("%-8s %8s %10s %12s %12s\n", "template", "messages", "out bytes", "us/render", "MB/s out");
  for (const char* name : {"llama3", "qwen2.5", "chatml"}) {
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const auto& c) { return c["template_name"] == name; });
    if (it == cases.end()) continue;
    const auto bos = (*it)["bos_token"].is_null() ? std::nullopt : std::optional<std::string>((*it)["bos_token"].get<std::string>());
    const auto tmpl = vks::chat::ChatTemplate::parse((*it)["template"].get<std::string>(), bos, (*it)["eos_token"].get<std::string>());
    size_t bytes = tmpl.render(conversation, true).size();  // warm-up
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) bytes = tmpl.render(conversation, true).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double us = seconds * 1e6 / iters;
    std::printf("%-8s %8zu %10zu %12.1f %12.1f\n", name, conversation.size(), bytes, us, static_cast<double>(bytes) / us);
  }
  return 0;
}
