// vkstreamd parses and test-renders the chat template at load: the model's template, a
// --chat-template file, or ChatML (logged) when the model has none or one the interpreter cannot
// handle; a broken --chat-template file stops the start with the template line named.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <optional>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"

namespace {

using vks::test::run_process;

// stories260K with tokenizer.chat_template set (or left absent).
std::string model_with_template(const std::string& dir, const std::optional<std::string>& tmpl) {
  const auto source = vks::gguf::GgufFile::open(vks::test::model_path("stories260K.gguf"));
  vks::gguf::GgufWriter writer;
  writer.set_alignment(source.alignment());
  for (const auto& kv : source.metadata()) {
    if (kv.key != "general.alignment") writer.set(kv.key, kv.value);
  }
  if (tmpl) writer.set("tokenizer.chat_template", vks::gguf::make_string(*tmpl));
  std::vector<std::vector<uint8_t>> data;
  for (const auto& t : source.tensors()) {
    writer.add_tensor(t.name, t.type, t.dims);
    const auto bytes = source.tensor_data(t);
    data.emplace_back(bytes.begin(), bytes.end());
  }
  const std::string path = dir + "/model.gguf";
  vks::gguf::write_gguf_file(writer, data, path);
  return path;
}

// Starts vkstreamd, lets it exit on its own after 0.3 s idle, returns its exit code and log.
vks::test::ProcessResult run_daemon(const std::string& dir, const std::string& model,
                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {vks::test::build_dir() + "/server/vkstreamd", "--model", model, "--cpu",
                                   "--socket", dir + "/vkstream.sock", "--zmq", "ipc://" + dir + "/router.zmq",
                                   "--pub", "ipc://" + dir + "/pub.zmq", "--idle-exit", "0.3"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto result = run_process(argv, "", 60);
  result.err = result.out + result.err;
  return result;
}

TEST(DaemonChatTemplate, ModelTemplateIsUsed) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const auto r = run_daemon(dir, model_with_template(dir, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chat template: model"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ChatML"), std::string::npos) << r.err;
}

TEST(DaemonChatTemplate, NoTemplateFallsBackToChatmlAndSaysSo) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const auto r = run_daemon(dir, vks::test::model_path("stories260K.gguf"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the model has no tokenizer.chat_template; falling back to ChatML"), std::string::npos) << r.err;
}

TEST(DaemonChatTemplate, UnusableTemplateIsReportedAtLoadAndFallsBack) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const auto r = run_daemon(dir, model_with_template(dir, "{{ bos_token }}\n{{ messages | frobnicate }}"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("template line 2: unknown filter 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("falling back to ChatML"), std::string::npos) << r.err;
}

// Issue 37: as a GGUF's template, the list-doubling attack took the host's memory during the
// probe render, and a quadratic list build delayed `ready` by minutes. Both are stopped by the
// render's bounds, logged, and the daemon serves with ChatML.
TEST(DaemonChatTemplate, HostileModelTemplateIsStoppedAtLoad) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const auto start = std::chrono::steady_clock::now();
  auto r = run_daemon(dir, model_with_template(dir, "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}"
                                                    "{% set ns.l = ns.l + ns.l %}{% endfor %}"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("template exceeded its memory limit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("falling back to ChatML"), std::string::npos) << r.err;
  r = run_daemon(dir, model_with_template(dir, "{% set ns = namespace(l=[]) %}{% for i in range(200000) %}"
                                               "{% set ns.l = ns.l + [i] %}{% endfor %}"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("falling back to ChatML"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// Seconds between the log lines holding `from` and `to` ("2026-11-28T22:20:05.168 info ..."),
// or -1 when either is missing.
double seconds_between(const std::string& log, const std::string& from, const std::string& to) {
  const auto stamp = [&](const std::string& what) -> double {
    const size_t at = log.find(what);
    if (at == std::string::npos) return -1;
    const size_t line = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
    const size_t t = log.find('T', line);
    if (t == std::string::npos || t + 13 > log.size()) return -1;
    return std::stod(log.substr(t + 1, 2)) * 3600 + std::stod(log.substr(t + 4, 2)) * 60 + std::stod(log.substr(t + 7, 6));
  };
  const double a = stamp(from), b = stamp(to);
  return a < 0 || b < 0 ? -1 : b - a;
}

// Issue 37: the renders at load (validate()'s samples, the tool-call probes, the reasoning probe)
// each had 2 s, so a template slow for a system message and for `tools` (but not without them)
// delayed `ready` by 3 x 2 s. They share 2 s now: the first sample spends it, and a template that
// slow is not used (ChatML, logged).
TEST(DaemonChatTemplate, LoadProbesShareOneTimeBound) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const std::string slow = "{% if tools is defined or messages[0].role == 'system' %}{% set s = 'a' * 1000000 %}"
                           "{% for i in range(100000) %}{% set n = s.count('b') + s.count('c') %}{% endfor %}"
                           "{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}";
  const auto r = run_daemon(dir, model_with_template(dir, slow));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Where the shared bound runs out decides what is logged: in validate()'s system-message sample the
  // template falls back to ChatML; in the tool-call probes after it (on a quieter machine) the
  // template is kept without a tool format. Either way the daemon starts within the bound.
  // On a fast machine the template's step limit can run out before its 2 s (CI saw it at 2.0 s);
  // that is the same bound reached another way.
  const bool fell_back = r.err.find("template exceeded its time limit (2000 ms)); falling back to ChatML") != std::string::npos ||
                         r.err.find("template exceeded its step limit (endless loop?)); falling back to ChatML") != std::string::npos;
  EXPECT_TRUE(fell_back || r.err.find("chat template: model") != std::string::npos)
      << r.err;
  // Liveness, not performance: 6 s before, 2 s now (the bound), whatever the machine's speed.
  const double load = seconds_between(r.err, "loading model", "chat template:");
  EXPECT_GE(load, 0) << r.err;
  EXPECT_LT(load, 4.0) << r.err;
}

TEST(DaemonChatTemplate, UserTemplateOverridesAndABrokenOneStopsTheStart) {
  const std::string dir = vks::test::make_temp_dir("vks-chat-daemon");
  const std::string good = dir + "/good.jinja";
  const std::string bad = dir + "/bad.jinja";
  {
    std::ofstream(good) << "{% for m in messages %}{{ m.content }}{% endfor %}";
    std::ofstream(bad) << "{% for m in messages %}\n{% if m %}{% endfor %}";
  }
  auto r = run_daemon(dir, vks::test::model_path("stories260K.gguf"), {"--chat-template", good});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chat template: file " + good), std::string::npos) << r.err;

  r = run_daemon(dir, vks::test::model_path("stories260K.gguf"), {"--chat-template", bad});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("template line"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
}

}  // namespace
