// The `chat` request end to end against vkstreamd on stories260K (no chat template: the logged
// ChatML fallback): the prompt is the rendered conversation, a conversation's next turn re-uses the
// cached prefix, the reply stops at the model's end-of-generation token, cancel works, bad input
// gets field-level errors; and `vkstream chat` drives a conversation from stdin.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "tests/clients/process_util.h"
#include "tests/common/test_models.h"
#include "vkstream/client.h"

namespace {

using vks::test::Daemon;

class ChatE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new Daemon(); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static vkstream::Client connect() {
    vkstream::Client c = vkstream::Client::connect(daemon_->endpoint());
    c.set_timeout(std::chrono::seconds(60));
    return c;
  }
  static Daemon* daemon_;
};
Daemon* ChatE2E::daemon_ = nullptr;

const std::string kSystem =
    "You are a story teller. You tell short stories about a little girl named Lily and her dog, who "
    "live in a small house near the park, where they play every day.";

std::string chatml(const std::vector<vkstream::ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

TEST_F(ChatE2E, PromptIsTheRenderedConversation) {
  vkstream::Client c = connect();
  vkstream::GenerateOptions o;
  o.messages = {{"system", kSystem}, {"user", "Tell me about Lily."}};
  o.max_tokens = 8;
  o.temperature = 0;
  const vkstream::Completion done = c.generate(o);
  EXPECT_EQ(done.finish_reason, "length");
  EXPECT_EQ(done.usage.generated_tokens, 8);
  // The ChatML fallback's text, tokenized with BOS (stories260K adds one) and special parsing.
  const std::vector<int32_t> expected = c.tokenize(chatml(o.messages), true, true);
  EXPECT_EQ(done.usage.prompt_tokens, static_cast<int64_t>(expected.size()));

  // The same text through generate gives the same continuation.
  vkstream::GenerateOptions g;
  g.prompt_ids = expected;
  g.max_tokens = 8;
  g.temperature = 0;
  EXPECT_EQ(c.generate(g).text, done.text);
}

TEST_F(ChatE2E, SecondTurnHitsThePrefixCache) {
  vkstream::Client c = connect();
  vkstream::GenerateOptions o;
  o.messages = {{"system", kSystem + " (prefix test)"}, {"user", "Once upon a time"}};
  o.max_tokens = 6;
  o.temperature = 0;
  const vkstream::Completion first = c.generate(o);
  ASSERT_GE(first.usage.prompt_tokens, 32);
  o.messages.push_back({"assistant", first.text});
  o.messages.push_back({"user", "And then?"});
  const vkstream::Completion second = c.generate(o);
  EXPECT_GT(second.usage.prompt_tokens, first.usage.prompt_tokens);
  EXPECT_GE(second.usage.cached_tokens, 16) << "the second turn should re-use the first turn's cached prompt";
}

TEST_F(ChatE2E, ReplyStopsAtTheEndOfGenerationToken) {
  vkstream::Client c = connect();
  const int32_t eos = 2;  // stories260K's EOS
  vkstream::GenerateOptions o;
  o.messages = {{"user", "Hi"}};
  o.max_tokens = 50;
  o.logit_bias = {{eos, 100.0}};  // the model now wants to end its turn at once
  const vkstream::Completion done = c.generate(o);
  EXPECT_EQ(done.finish_reason, "stop");
  EXPECT_LE(done.usage.generated_tokens, 1);  // the end-of-generation token itself, never emitted
  EXPECT_TRUE(done.text.empty());
  // ignore_eos keeps going: the stop above came from the end-of-generation token.
  o.ignore_eos = true;
  o.max_tokens = 3;
  EXPECT_EQ(c.generate(o).finish_reason, "length");
}

TEST_F(ChatE2E, StopStringsAndCancelWorkAsForGenerate) {
  vkstream::Client c = connect();
  vkstream::GenerateOptions o;
  o.messages = {{"user", "Tell a long story."}};
  o.max_tokens = 1500;
  o.ignore_eos = true;
  const vkstream::Accepted a = c.submit(o);
  c.cancel(a.id);
  std::string reason;
  while (auto ev = c.next_event(a.id, std::chrono::seconds(30))) {
    if (ev->kind == vkstream::EventKind::kFinished) {
      reason = ev->finish_reason;
      break;
    }
  }
  EXPECT_EQ(reason, "cancelled");
  EXPECT_EQ(c.status(a.id).state, "finished");
}

// Issue 12: grammar / json_schema apply to chat as to generate, compiled off the loop; a bad one is
// rejected by field with its position.
TEST_F(ChatE2E, JsonSchemaConstrainsTheReply) {
  vkstream::Client c = connect();
  vkstream::GenerateOptions o;
  o.messages = {{"user", "Give me a number."}};
  o.temperature = 0;
  o.max_tokens = 40;
  o.json_schema = R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false})";
  const vkstream::Completion done = c.generate(o);
  ASSERT_EQ(done.finish_reason, "stop") << done.text;  // stories260K never writes JSON by itself
  std::string compact;  // the grammar allows JSON whitespace; an integer value has none of its own
  for (char ch : done.text) {
    if (ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r') compact += ch;
  }
  ASSERT_GT(compact.size(), 6u) << done.text;
  EXPECT_EQ(compact.rfind("{\"n\":", 0), 0u) << done.text;
  EXPECT_EQ(compact.back(), '}') << done.text;
  const std::string digits = compact.substr(5, compact.size() - 6);
  EXPECT_EQ(digits.find_first_not_of("-0123456789"), std::string::npos) << done.text;

  o.json_schema = R"({"type":"object","properties":{"a":{"not":{}}}})";
  try {
    c.generate(o);
    ADD_FAILURE() << "a schema with an unsupported keyword was accepted";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "invalid_field");
    EXPECT_EQ(e.field(), "json_schema") << e.server_message();
  }
}

TEST_F(ChatE2E, BadInputGetsFieldLevelErrors) {
  vkstream::Client c = connect();
  const auto error_of = [&](const vkstream::GenerateOptions& o) -> std::pair<std::string, std::string> {
    try {
      c.generate(o);
    } catch (const vkstream::ServerError& e) {
      return {e.code(), e.field() + " | " + e.server_message()};
    }
    return {"", ""};
  };
  vkstream::GenerateOptions o;
  o.messages = {{"user", "Hi"}};
  o.max_tokens = 2;
  o.chat_template = "line one\n{{ messages | frobnicate }}";
  auto [code, what] = error_of(o);
  EXPECT_EQ(code, "invalid_field");
  EXPECT_NE(what.find("chat_template | "), std::string::npos) << what;
  EXPECT_NE(what.find("template line 2: unknown filter 'frobnicate'"), std::string::npos) << what;

  o.chat_template = "{% for m in messages %}{% if m.role == 'user' %}{{ raise_exception('no users here') }}{% endif %}{% endfor %}";
  std::tie(code, what) = error_of(o);
  EXPECT_EQ(code, "invalid_field");
  EXPECT_NE(what.find("no users here"), std::string::npos) << what;

  // Issue 37: a template that doubles a list 64 times took the host's memory; it is now stopped
  // by the render's memory bound and answered like any template error. (Its 256 MiB of copies take
  // about 0.8 s; on a loaded machine the 2 s time bound can come first, as bounded and as clear.)
  o.chat_template = "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}";
  std::tie(code, what) = error_of(o);
  EXPECT_EQ(code, "invalid_field");
  EXPECT_TRUE(what.find("chat_template | template line 1: template exceeded its memory limit") != std::string::npos ||
              what.find("chat_template | template line 1: template exceeded its time limit") != std::string::npos)
      << what;
  o.chat_template = "{% set ns = namespace(l=[]) %}{% for i in range(200000) %}{% set ns.l = ns.l + [i] %}{% endfor %}";
  std::tie(code, what) = error_of(o);
  EXPECT_EQ(code, "invalid_field");
  EXPECT_NE(what.find("memory limit"), std::string::npos) << what;

  o.chat_template.reset();
  o.messages = {{"", "no role"}};
  std::tie(code, what) = error_of(o);
  EXPECT_EQ(code, "invalid_field");
  EXPECT_NE(what.find("messages.0.role"), std::string::npos) << what;

  // The request still works afterwards on the same connection.
  o.messages = {{"user", "Hi"}};
  EXPECT_EQ(c.generate(o).usage.generated_tokens, 2);
}

TEST_F(ChatE2E, CliChatKeepsHistoryResetsAndSetsTheSystemPrompt) {
  std::vector<std::string> argv = {vks::test::build_dir() + "/clients/cli/vkstream", "chat", "--max-tokens", "5",
                                   "--temperature", "0", "-v"};
  const auto flags = daemon_->cli_flags();
  argv.insert(argv.end(), flags.begin(), flags.end());
  const auto r = vks::test::run_process(argv, "Hello there\nWhat next?\n/reset\nHello there\n/system Be brief.\nHi\n/quit\nignored\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One "[length: prompt N (cached M), ...]" line per reply, in order.
  std::vector<int> prompts;
  for (size_t p = r.err.find("[length: prompt "); p != std::string::npos; p = r.err.find("[length: prompt ", p + 1)) {
    prompts.push_back(std::stoi(r.err.substr(p + 16)));
  }
  ASSERT_EQ(prompts.size(), 4u) << r.err;
  EXPECT_GT(prompts[1], prompts[0]);   // the history came along
  EXPECT_EQ(prompts[2], prompts[0]);   // /reset: the same first turn again
  EXPECT_GT(prompts[3], 0);
  EXPECT_NE(r.err.find("[conversation cleared]"), std::string::npos);
  EXPECT_NE(r.err.find("[system prompt set]"), std::string::npos);
}

// Issue 10: a synthetic Llama-3.2-1B-shape model (one block, to keep CI fast on the CPU) with
// llama3-vocab.gguf's vocabulary and chat template chats through `vkstream chat`. A large logit
// bias on <|eot_id|> makes the reply want to end at once: it must stop there ("stop", no text
// printed), and the same bias with --ignore-eos runs to --max-tokens, so the check can fail.
TEST(ChatLlama3Cli, ReplyStopsAtEotId) {
  const std::string vocab = vks::test::model_path("llama3-vocab.gguf");
  if (::access(vocab.c_str(), R_OK) != 0) GTEST_SKIP() << "no " << vocab;
  const std::string dir = vks::test::make_temp_dir("vks-chat-llama3");
  const std::string model = dir + "/llama-3.2-1b-shape.gguf";
  const auto made = vks::test::run_process({vks::test::build_dir() + "/tools/vks-make-model", "--preset", "llama-3.2-1b",
                                            "--layers", "1", "--context", "512", "--vocab-from", vocab, "-q", "-o", model});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  {
    Daemon daemon({"--model", model});
    vkstream::Client c = vkstream::Client::connect(daemon.endpoint());
    c.set_timeout(std::chrono::seconds(120));
    const std::vector<int32_t> eot = c.tokenize("<|eot_id|>", false, true);
    ASSERT_EQ(eot.size(), 1u);
    const std::string vkstream_exe = vks::test::build_dir() + "/clients/cli/vkstream";
    const auto chat = [&](std::vector<std::string> extra) {
      std::vector<std::string> argv = {vkstream_exe, "chat", "--temperature", "0", "-v",
                                       "--logit-bias", std::to_string(eot[0]) + "=100"};
      argv.insert(argv.end(), extra.begin(), extra.end());
      const auto flags = daemon.cli_flags();
      argv.insert(argv.end(), flags.begin(), flags.end());
      return vks::test::run_process(argv, "Hi\n/quit\n");
    };
    const auto stopped = chat({"--max-tokens", "8"});
    ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
    EXPECT_NE(stopped.err.find("[stop: prompt "), std::string::npos) << stopped.err;
    EXPECT_NE(stopped.err.find("generated 1;"), std::string::npos) << stopped.err;  // <|eot_id|> itself
    EXPECT_EQ(stopped.out.find("<|eot_id|>"), std::string::npos) << stopped.out;
    const auto forced = chat({"--max-tokens", "2", "--ignore-eos"});
    ASSERT_EQ(forced.exit_code, 0) << forced.err;
    EXPECT_NE(forced.err.find("[length: prompt "), std::string::npos) << forced.err;
    EXPECT_NE(forced.err.find("generated 2;"), std::string::npos) << forced.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
