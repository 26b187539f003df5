// The chat endpoints' mappings without a daemon: OpenAI and Ollama chat bodies → the wire `chat`
// request (parsed by the Unix socket's own parser), every bad body a 4xx ApiError naming the field,
// a structured fuzzer over both (never a throw, never a 5xx), and the answer renderers' shapes
// (chunks, logprobs bytes, usage, errors) from hand-made wire events.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "server/http/ollama_api.h"
#include "server/http/openai_api.h"
#include "server/http/ollama_chat.h"
#include "server/http/openai_chat.h"
#include "server/http/answer_parse.h"
#include "server/http/anthropic_messages.h"
#include "server/http/openai_responses.h"
#include "server/http/token_api.h"

namespace vks::http {
namespace {

using nlohmann::json;

ModelCatalogue catalogue() {
  ModelCatalogue m;
  m.id = "stories260K";
  return m;
}

proto::ProtocolLimits limits() {
  proto::ProtocolLimits l;
  l.max_prompt_tokens = 2048;
  l.max_tokens = 2048;
  return l;
}

const json kOpenAi = json::parse(R"({"model":"stories260K","messages":[
  {"role":"developer","content":"Be brief."},
  {"role":"user","content":[{"type":"text","text":"Hello"},{"type":"text","text":"there"}]},
  {"role":"assistant","content":null},
  {"role":"user","content":"Go on"}],
  "max_tokens":12,"temperature":0.5,"stop":["\n\n"],"logprobs":true,"top_logprobs":2,
  "response_format":{"type":"json_object"},"stream":true,"stream_options":{"include_usage":true}})");

const json kOllama = json::parse(R"({"model":"stories260K","messages":[
  {"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],
  "options":{"num_predict":12,"temperature":0.5,"repeat_penalty":1.1},"format":"json","stream":false})");

TEST(ChatMapping, OpenAiBodyBecomesTheWireChatRequest) {
  auto mapped = map_openai_chat(kOpenAi, catalogue());
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(mapped)) << std::get<ApiError>(mapped).message;
  const OpenAiChatRequest& r = std::get<OpenAiChatRequest>(mapped);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 2);
  auto wire = to_chat_request(r.wire, limits(), openai_chat_param_names());
  ASSERT_TRUE(std::holds_alternative<proto::ChatRequest>(wire)) << std::get<ApiError>(wire).message;
  const proto::ChatRequest& chat = std::get<proto::ChatRequest>(wire);
  ASSERT_EQ(chat.messages.size(), 4u);
  EXPECT_EQ(chat.messages[0].role, "system");  // developer
  EXPECT_EQ(chat.messages[1].content, "Hello\nthere");
  EXPECT_EQ(chat.messages[2].role, "assistant");
  EXPECT_EQ(chat.messages[2].content, "");
  EXPECT_EQ(r.wire["max_tokens"], 12);
  EXPECT_EQ(r.wire["logprobs"], 2);
  EXPECT_EQ(r.wire["json_schema"], R"({"type":"object"})");
  EXPECT_FALSE(r.wire.contains("prompt"));
  EXPECT_TRUE(chat.add_generation_prompt);

  json no_header = kOpenAi;
  no_header["add_generation_prompt"] = false;
  auto continued = map_openai_chat(no_header, catalogue());
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(continued));
  auto continued_wire = to_chat_request(std::get<OpenAiChatRequest>(continued).wire, limits(), openai_chat_param_names());
  ASSERT_TRUE(std::holds_alternative<proto::ChatRequest>(continued_wire));
  EXPECT_FALSE(std::get<proto::ChatRequest>(continued_wire).add_generation_prompt);
}

TEST(ChatMapping, OllamaBodyBecomesTheWireChatRequest) {
  auto mapped = map_ollama_chat(kOllama, catalogue());
  ASSERT_TRUE(std::holds_alternative<OllamaChatRequest>(mapped)) << std::get<ApiError>(mapped).message;
  const OllamaChatRequest& r = std::get<OllamaChatRequest>(mapped);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.load_only);
  EXPECT_EQ(r.wire["max_tokens"], 12);
  EXPECT_EQ(r.wire["repetition_penalty"], 1.1);
  EXPECT_EQ(r.wire["json_schema"], R"({"type":"object"})");
  auto wire = to_chat_request(r.wire, limits(), ollama_chat_param_names());
  ASSERT_TRUE(std::holds_alternative<proto::ChatRequest>(wire)) << std::get<ApiError>(wire).message;
  EXPECT_EQ(std::get<proto::ChatRequest>(wire).messages.size(), 2u);

  json load = {{"model", "stories260K"}, {"messages", json::array()}};
  auto loaded = map_ollama_chat(load, catalogue());
  ASSERT_TRUE(std::holds_alternative<OllamaChatRequest>(loaded));
  EXPECT_TRUE(std::get<OllamaChatRequest>(loaded).load_only);
}

// Tools on the wire: the list as JSON text in the client's order, tool_choice and the named
// function, an assistant turn's calls with their arguments parsed from OpenAI's JSON string, a
// tool turn's id; and the parser the answer will go through.
TEST(ChatMapping, ToolsBecomeTheWireToolFields) {
  HttpRequest openai;
  openai.body = R"({"messages":[{"role":"user","content":"Weather?"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"z\":1,\"a\":2}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"sunny"}],
    "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"z":{},"a":{}}}}}],
    "tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false})";
  auto body = parse_json_object(openai);
  ASSERT_TRUE(std::holds_alternative<JsonBody>(body));
  auto mapped = map_openai_chat(std::get<JsonBody>(body), catalogue());
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(mapped)) << std::get<ApiError>(mapped).message;
  OpenAiChatRequest& r = std::get<OpenAiChatRequest>(mapped);
  EXPECT_TRUE(r.tools.has_value());
  auto wire = to_chat_request(r.wire, limits(), openai_chat_param_names());
  ASSERT_TRUE(std::holds_alternative<proto::ChatRequest>(wire)) << std::get<ApiError>(wire).message;
  const proto::ChatRequest& chat = std::get<proto::ChatRequest>(wire);
  EXPECT_EQ(chat.tools, R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"z":{},"a":{}}}}}])");
  EXPECT_EQ(chat.tool_choice, "function");
  EXPECT_EQ(chat.tool_name, "get_weather");
  EXPECT_EQ(chat.parallel_tool_calls, false);
  ASSERT_EQ(chat.messages.size(), 3u);
  EXPECT_EQ(chat.messages[1].tool_calls,
            R"([{"id":"c1","type":"function","function":{"name":"get_weather","arguments":{"z":1,"a":2}}}])");
  EXPECT_EQ(chat.messages[2].tool_call_id, "c1");

  // tool_choice "none": tools known to the wire, nothing offered, no parser.
  JsonBody none = std::get<JsonBody>(body);
  none["tool_choice"] = "none";
  auto not_offered = map_openai_chat(none, catalogue());
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(not_offered));
  EXPECT_FALSE(std::get<OpenAiChatRequest>(not_offered).tools.has_value());
}

// A body as the front end reads it (parse_json_object), the schema sent on in its declared order on
// both surfaces: {reasoning, answer} stays reason-first (a sorted JSON map made it {answer, reasoning}).
TEST(ChatMapping, SchemasKeepTheirDeclaredPropertyOrder) {
  const std::string schema = R"({"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"}},"required":["reasoning","answer"]})";
  HttpRequest openai;
  openai.body = R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":)" +
                schema + "}}}";
  auto body = parse_json_object(openai);
  ASSERT_TRUE(std::holds_alternative<JsonBody>(body));
  auto mapped = map_openai_chat(std::get<JsonBody>(body), catalogue());
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(mapped)) << std::get<ApiError>(mapped).message;
  EXPECT_EQ(std::get<OpenAiChatRequest>(mapped).wire["json_schema"], schema);
  auto wire = to_chat_request(std::get<OpenAiChatRequest>(mapped).wire, limits(), openai_chat_param_names());
  ASSERT_TRUE(std::holds_alternative<proto::ChatRequest>(wire));
  EXPECT_EQ(std::get<proto::ChatRequest>(wire).generate.json_schema, schema);

  HttpRequest ollama;
  ollama.body = R"({"model":"stories260K","messages":[{"role":"user","content":"x"}],"format":)" + schema + "}";
  body = parse_json_object(ollama);
  ASSERT_TRUE(std::holds_alternative<JsonBody>(body));
  auto mapped_ollama = map_ollama_chat(std::get<JsonBody>(body), catalogue());
  ASSERT_TRUE(std::holds_alternative<OllamaChatRequest>(mapped_ollama)) << std::get<ApiError>(mapped_ollama).message;
  EXPECT_EQ(std::get<OllamaChatRequest>(mapped_ollama).wire["json_schema"], schema);
}

// The error of a body: mapping first, then the wire parser (as the front end does).
std::optional<ApiError> openai_error(const json& body) {
  auto mapped = map_openai_chat(body, catalogue());
  if (auto* e = std::get_if<ApiError>(&mapped)) return *e;
  auto wire = to_chat_request(std::get<OpenAiChatRequest>(mapped).wire, limits(), openai_chat_param_names());
  if (auto* e = std::get_if<ApiError>(&wire)) return *e;
  return std::nullopt;
}

std::optional<ApiError> ollama_error(const json& body) {
  auto mapped = map_ollama_chat(body, catalogue());
  if (auto* e = std::get_if<ApiError>(&mapped)) return *e;
  if (std::get<OllamaChatRequest>(mapped).load_only) return std::nullopt;
  auto wire = to_chat_request(std::get<OllamaChatRequest>(mapped).wire, limits(), ollama_chat_param_names());
  if (auto* e = std::get_if<ApiError>(&wire)) return *e;
  return std::nullopt;
}

TEST(ChatMapping, BadOpenAiBodiesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "messages"},
      {R"({"messages":[]})", "messages"},
      {R"({"messages":{"role":"user"}})", "messages"},
      {R"({"messages":[{"role":"robot","content":"x"}]})", "messages.0.role"},
      {R"({"messages":[{"content":"x"}]})", "messages.0.role"},
      {R"({"messages":[{"role":"user","content":"x"},{"role":"user"}]})", "messages.1.content"},
      {R"({"messages":[{"role":"user","content":[{"type":"input_audio"}]}]})", "messages.0.content.0.type"},
      {R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages.0.content.0.text"},
      {R"({"messages":[{"role":"user","content":[7]}]})", "messages.0.content.0"},
      {R"({"messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"1"}]}]})", "messages.0.tool_calls.0"},
      {R"({"messages":[{"role":"assistant","content":"x","tool_calls":[{"function":{"name":"f","arguments":"{x"}}]}]})",
       "messages.0.tool_calls.0.function.arguments"},
      {R"({"messages":[{"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]}]})", "messages.0.tool_calls"},
      {R"({"messages":[{"role":"assistant","content":"x","function_call":{"name":"f"}}]})", "messages.0.function_call"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{}]})", "tools.0.function"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":{}})", "tools"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":""}}]})", "tools.0.function.name"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f","parameters":3}}]})", "tools.0.function.parameters"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f"}}],"tool_choice":"sometimes"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f"}}],"tool_choice":{"type":"function"}})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"f"}}],"parallel_tool_calls":1})", "parallel_tool_calls"},
      {R"({"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]})", "functions"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":3})", "logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":17})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":0})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":1.5})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":"2"})", "n"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})", "max_tokens"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_p":2})", "top_p"},
      {R"({"messages":[{"role":"user","content":"x"}],"modalities":["audio"]})", "modalities"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})", "response_format"},
      {R"({"messages":[{"role":"user","content":"x"}],"chat_template":7})", "chat_template"},
      // (missing keys inside response_format once read a const operator[]: undefined behaviour)
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{}})", "response_format"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})",
       "response_format.json_schema.schema"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{}}})",
       "response_format.json_schema.schema"},
  };
  for (const auto& [body, param] : cases) {
    auto e = openai_error(json::parse(body));
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, param) << body << ": " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
  auto unknown = openai_error(json::parse(R"({"model":"gpt-x","messages":[{"role":"user","content":"x"}]})"));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST(ChatMapping, BadOllamaBodiesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages":[{"role":"user","content":"x"}]})", "model"},
      {R"({"model":"stories260K","messages":"x"})", "messages"},
      {R"({"model":"stories260K","messages":[{"role":"developer","content":"x"}]})", "messages.0.role"},
      {R"({"model":"stories260K","messages":[{"role":"user","content":["x"]}]})", "messages.0.content"},
      {R"({"model":"stories260K","messages":[{"role":"user","content":"x","images":["aGk="]}]})", "messages.0.images"},
      {R"({"model":"stories260K","messages":[{"role":"user","content":"x"}],"tools":[{}]})", "tools.0.function"},
      {R"({"model":"stories260K","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]})",
       "messages.0.tool_calls.0.function.arguments"},
      {R"({"model":"stories260K","messages":[{"role":"user","content":"x"}],"format":7})", "format"},
      {R"({"model":"stories260K","messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}})",
       "options.temperature"},
  };
  for (const auto& [body, param] : cases) {
    auto e = ollama_error(json::parse(body));
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, param) << body << ": " << e->message;
  }
}

// Replaces one value somewhere in the body (any depth) with an odd one, or deletes it.
void mutate(std::mt19937& rng, json& j) {
  static const std::vector<json> odd = {nullptr, true, -1, 0, 1e300, -3.5, "", "x", "system", json::array(),
                                        json::object(), json::array({1, 2}), json::object({{"type", "text"}}),
                                        std::string(300, 'a'), 99999999999LL};
  json* at = &j;
  for (int depth = 0; depth < 5; ++depth) {
    if (!(at->is_object() || at->is_array()) || at->empty() || rng() % 3 == 0) break;
    auto it = at->begin();
    std::advance(it, static_cast<long>(rng() % at->size()));
    at = &*it;
  }
  if (rng() % 5 == 0 && (j.is_object() || j.is_array()) && at != &j) {
    *at = nullptr;
  } else {
    *at = odd[rng() % odd.size()];
  }
}

TEST(ChatMapping, FuzzedBodiesAreAnsweredOr4xxNeverThrowNor5xx) {
  std::mt19937 rng(2026);
  int accepted = 0;
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    json body = i % 2 == 0 ? kOpenAi : kOllama;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) mutate(rng, body);
    std::optional<ApiError> e;
    ASSERT_NO_THROW(e = i % 2 == 0 ? openai_error(body) : ollama_error(body)) << body.dump();
    if (e) {
      ++rejected;
      EXPECT_GE(e->status, 400) << body.dump();
      EXPECT_LT(e->status, 500) << body.dump() << ": " << e->message;
      EXPECT_FALSE(e->message.empty());
    } else {
      ++accepted;
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 300);
}

Generation generation(Api api, bool stream, int32_t logprobs) {
  Generation g;
  g.api = api;
  g.id = "abc";
  g.model = "stories260K";
  g.stream = stream;
  g.include_usage = true;
  g.logprobs = logprobs;
  g.prompt_tokens = 9;
  return g;
}

proto::StreamEvent token_event(const std::string& text, proto::TokenId id) {
  proto::StreamEvent ev;
  ev.type = proto::StreamEventType::kToken;
  ev.text = text;
  ev.ids.push_back(id);
  proto::GeneratedToken t;
  t.id = id;
  t.logprob = -0.25f;
  t.top = {{id, -0.25f}, {id + 1, -2.0f}};
  ev.logprobs.push_back(t);
  return ev;
}

proto::StreamEvent finished_event(proto::FinishReason reason) {
  proto::StreamEvent ev;
  ev.type = proto::StreamEventType::kFinished;
  ev.reason = reason;
  ev.usage.prompt_tokens = 9;
  ev.usage.generated_tokens = 2;
  return ev;
}

std::vector<json> data_events(const std::string& sse) {
  std::vector<json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    pos = end;
  }
  return out;
}

// Token 7's text is "é" split over bytes; its alternative 8 is "x".
std::string token_text(proto::TokenId id) { return id == 7 ? std::string("\xC3\xA9") : std::string("x"); }

TEST(ChatMapping, OpenAiChunksHaveTheChatShape) {
  Generation g = generation(Api::kOpenAiChat, true, 1);
  const json first = data_events(openai_chat_first_chunk(g)).at(0);
  EXPECT_EQ(first["id"], "chatcmpl-abc");
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const json chunk = data_events(openai_chat_token_chunk(g, token_event("\xC3\xA9", 7), token_text)).at(0);
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "\xC3\xA9");
  const json& lp = chunk["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(lp["token"], "\xC3\xA9");
  EXPECT_EQ(lp["bytes"], json::array({0xC3, 0xA9}));
  EXPECT_DOUBLE_EQ(lp["logprob"].get<double>(), -0.25);
  ASSERT_EQ(lp["top_logprobs"].size(), 1u);  // top_logprobs 1 of the 2 alternatives
  const std::vector<json> end = data_events(openai_chat_final_chunks(g, finished_event(proto::FinishReason::kLength)));
  ASSERT_EQ(end.size(), 3u);
  EXPECT_EQ(end[0]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(end[0]["choices"][0]["delta"].empty());
  EXPECT_TRUE(end[1]["choices"].empty());
  EXPECT_EQ(end[1]["usage"]["total_tokens"], 11);
  EXPECT_EQ(end[2], "[DONE]");

  g.error_message = "device lost";
  const std::vector<json> failed = data_events(openai_chat_final_chunks(g, finished_event(proto::FinishReason::kError)));
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0]["error"]["message"], "device lost");
  EXPECT_EQ(failed[1], "[DONE]");
}

TEST(ChatMapping, WholeAnswersHaveTheChatShape) {
  Generation g = generation(Api::kOpenAiChat, false, 0);
  openai_chat_accumulate(g, token_event("\xC3\xA9", 7), token_text);
  openai_chat_accumulate(g, token_event("x", 8), token_text);
  const json answer = openai_chat_completion(g, finished_event(proto::FinishReason::kStop));
  EXPECT_EQ(answer["object"], "chat.completion");
  EXPECT_EQ(answer["choices"][0]["message"]["content"], "\xC3\xA9x");
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(answer["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_TRUE(answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"].empty());

  Generation o = generation(Api::kOllamaChat, false, -1);
  o.text = "hello";
  const json whole = ollama_chat_final(o, finished_event(proto::FinishReason::kLength), /*with_text=*/true);
  EXPECT_EQ(whole["message"]["role"], "assistant");
  EXPECT_EQ(whole["message"]["content"], "hello");
  EXPECT_EQ(whole["done_reason"], "length");
  EXPECT_EQ(whole["eval_count"], 2);
  EXPECT_FALSE(whole.contains("response"));
  const json line = json::parse(ollama_chat_line(o, token_event("hi", 8)));
  EXPECT_EQ(line["message"]["content"], "hi");
  EXPECT_EQ(line["done"], false);
  EXPECT_EQ(ollama_chat_line(o, token_event("", 8)), "");
}

}  // namespace
}  // namespace vks::http

namespace vks::http {
namespace {

// Ollama's model details: tied embeddings are one tensor, counted once; "tools" is a capability
// only where the served template renders tools itself.
TEST(OllamaShow, ParameterSizeAndCapabilities) {
  ModelCatalogue m;
  m.id = "m";
  m.info.dim = 1000;
  m.info.vocab_size = 100000;  // embeddings: 100M parameters per copy
  m.info.n_layers = 0;
  const std::string untied = ollama_show(m)["details"]["parameter_size"];
  m.tied_embeddings = true;
  const std::string tied = ollama_show(m)["details"]["parameter_size"];
  EXPECT_EQ(untied, "200.0M");
  EXPECT_EQ(tied, "100.0M");
  EXPECT_EQ(ollama_show(m)["capabilities"], nlohmann::json::array({"completion"}));
  m.tool_format.native = true;
  EXPECT_EQ(ollama_show(m)["capabilities"], nlohmann::json::array({"completion", "tools"}));
  m.reasoning.open = "<think>";
  m.reasoning.close = "</think>";
  EXPECT_EQ(ollama_show(m)["capabilities"], nlohmann::json::array({"completion", "tools", "thinking"}));
}

// A mixture-of-experts model: the engine's parameter count (all experts), the active count and the
// expert layout under the GGUF key names on /api/show, and in /v1/models' meta.
TEST(OllamaShow, ExpertLayoutAndActiveParameters) {
  ModelCatalogue m;
  m.id = "moe";
  m.info.architecture = "qwen3moe";
  m.info.dim = 2048;
  m.info.vocab_size = 151936;
  m.info.n_layers = 48;
  m.info.parameters = 30'532'122'624;
  m.info.active_parameters = 3'352'965'120;
  m.info.n_experts = 128;
  m.info.n_experts_used = 8;
  m.info.expert_hidden_dim = 768;
  const nlohmann::json show = ollama_show(m);
  EXPECT_EQ(show["details"]["parameter_size"], "30.5B");
  EXPECT_EQ(show["model_info"]["qwen3moe.expert_count"], 128);
  EXPECT_EQ(show["model_info"]["qwen3moe.expert_used_count"], 8);
  EXPECT_EQ(show["model_info"]["qwen3moe.expert_feed_forward_length"], 768);
  EXPECT_EQ(show["model_info"]["general.active_parameter_count"], 3'352'965'120);
  const nlohmann::json model = openai_model(m);
  EXPECT_EQ(model["meta"]["experts"]["used"], 8);
  EXPECT_EQ(model["meta"]["active_parameters"], 3'352'965'120);
  m.info.n_experts = 0;  // dense: no expert keys
  EXPECT_FALSE(ollama_show(m)["model_info"].contains("qwen3moe.expert_count"));
  EXPECT_FALSE(openai_model(m)["meta"].contains("experts"));
}

}  // namespace
}  // namespace vks::http

namespace vks::http {
namespace {

ModelCatalogue thinking_model(bool starts_inside, bool has_switch) {
  ModelCatalogue m;
  m.id = "thinker";
  m.reasoning.open = "<think>";
  m.reasoning.close = "</think>";
  m.reasoning.starts_inside = starts_inside;
  m.reasoning.has_switch = has_switch;
  return m;
}

AnswerPiece split_whole(Generation& g, const std::string& text) {
  AnswerPiece piece;
  split_answer(g, text, /*end=*/true, piece);
  return piece;
}

// Reasoning first, then tool calls in what remains; enable_thinking false means the answer starts
// outside the block only where the template reads the switch.
TEST(Reasoning, SplitBeforeToolsAndTheSwitch) {
  Generation g;
  g.reasoning = reasoning_parser(thinking_model(false, true), json::object());
  g.tools.emplace(chat::generic_tool_format());
  const AnswerPiece p = split_whole(g, "<think>plan</think>\n<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>");
  EXPECT_EQ(p.reasoning, "plan");
  EXPECT_EQ(p.answer.text, "");
  ASSERT_EQ(p.answer.calls.size(), 1u);
  EXPECT_EQ(p.answer.calls[0].name, "f");

  // The generation prompt opened the block: off by the switch, the answer is all content.
  Generation off;
  off.reasoning = reasoning_parser(thinking_model(true, true), json{{"enable_thinking", false}});
  EXPECT_EQ(split_whole(off, "abc</think>x").answer.text, "abc</think>x");
  // A template without the switch opens the block anyway.
  Generation always;
  always.reasoning = reasoning_parser(thinking_model(true, false), json{{"enable_thinking", false}});
  const AnswerPiece a = split_whole(always, "abc</think>x");
  EXPECT_EQ(a.reasoning, "abc");
  EXPECT_EQ(a.answer.text, "x");
  EXPECT_FALSE(reasoning_parser(catalogue(), json::object()).has_value());  // a template that does not think
}

TEST(Reasoning, ThinkSwitchesAndRefusals) {
  json wire = json::object();
  EXPECT_FALSE(map_think(Think::kOn, thinking_model(false, true), wire, "think", true).has_value());
  EXPECT_EQ(wire["enable_thinking"], true);
  wire = json::object();
  EXPECT_FALSE(map_think(Think::kUnset, thinking_model(false, true), wire, "think", true).has_value());
  EXPECT_FALSE(wire.contains("enable_thinking"));
  const auto refused = map_think(Think::kOn, catalogue(), wire, "think", /*strict=*/true);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(refused->param, "think");
  EXPECT_FALSE(map_think(Think::kOn, catalogue(), wire, "reasoning_effort", /*strict=*/false).has_value());
  EXPECT_FALSE(map_think(Think::kOff, catalogue(), wire, "think", /*strict=*/true).has_value());
  EXPECT_FALSE(wire.contains("enable_thinking"));  // nothing to switch on a model that does not think

  Think think = Think::kUnset;
  EXPECT_FALSE(read_template_kwargs(JsonBody::parse(R"({"chat_template_kwargs":{"enable_thinking":false}})"), think));
  EXPECT_EQ(think, Think::kOff);
  const auto unknown = read_template_kwargs(JsonBody::parse(R"({"chat_template_kwargs":{"foo":1}})"), think);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->param, "chat_template_kwargs.foo");

  // Each surface's switch on a thinking model, and the strict ones on a model that does not think.
  auto ollama = map_ollama_chat(JsonBody::parse(R"({"model":"thinker","messages":[{"role":"user","content":"hi"}],"think":false})"),
                                thinking_model(false, true));
  ASSERT_TRUE(std::holds_alternative<OllamaChatRequest>(ollama));
  EXPECT_EQ(std::get<OllamaChatRequest>(ollama).wire["enable_thinking"], false);
  EXPECT_FALSE(std::get<OllamaChatRequest>(ollama).show_reasoning);
  auto refused_ollama = map_ollama_chat(JsonBody::parse(R"({"model":"stories260K","messages":[{"role":"user","content":"hi"}],"think":true})"),
                                        catalogue());
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused_ollama));
  EXPECT_EQ(std::get<ApiError>(refused_ollama).code, "thinking_not_supported");
  auto openai = map_openai_chat(JsonBody::parse(R"({"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"none"})"),
                                thinking_model(false, true));
  ASSERT_TRUE(std::holds_alternative<OpenAiChatRequest>(openai));
  EXPECT_EQ(std::get<OpenAiChatRequest>(openai).wire["enable_thinking"], false);
}

TEST(TokenEndpoints, RequestsAndAnswers) {
  auto t = map_tokenize(JsonBody::parse(R"({"content":"hi","with_pieces":true})"));
  ASSERT_TRUE(std::holds_alternative<TokenizeHttpRequest>(t));
  EXPECT_TRUE(std::get<TokenizeHttpRequest>(t).with_pieces);
  EXPECT_TRUE(std::get<TokenizeHttpRequest>(t).parse_special);
  EXPECT_FALSE(std::get<TokenizeHttpRequest>(t).add_special);
  EXPECT_EQ(std::get<ApiError>(map_tokenize(JsonBody::parse(R"({"content":3})"))).param, "content");
  EXPECT_EQ(std::get<ApiError>(map_tokenize(JsonBody::parse(R"({"content":"x","add_special":"yes"})"))).param, "add_special");
  EXPECT_EQ(std::get<ApiError>(map_detokenize(JsonBody::parse(R"({"tokens":[1,512]})"), 512)).param, "tokens.1");
  EXPECT_EQ(std::get<ApiError>(map_detokenize(JsonBody::parse(R"({"tokens":[1.5]})"), 512)).param, "tokens.0");
  EXPECT_EQ(std::get<std::vector<proto::TokenId>>(map_detokenize(JsonBody::parse(R"({"tokens":[0,511]})"), 512)), (std::vector<proto::TokenId>{0, 511}));
  // A piece that is part of a UTF-8 character is its bytes.
  const json answer = tokenize_answer({7, 8}, true, [](proto::TokenId id) { return id == 7 ? std::string("ab") : std::string("\xC3"); });
  EXPECT_EQ(answer["tokens"][0], json({{"id", 7}, {"piece", "ab"}}));
  EXPECT_EQ(answer["tokens"][1]["piece"], json::array({0xC3}));
  EXPECT_EQ(tokenize_answer({7}, false, {})["tokens"], json::array({7}));
  EXPECT_EQ(count_tokens_body(JsonBody::parse(R"({"messages":[]})"))["max_tokens"], 1);
}

// Messages, Responses and the token endpoints with the reasoning fields, fuzzed as the chat bodies
// are: every body is answered or refused with a 4xx naming a problem, never a throw nor a 5xx.
TEST(Reasoning, FuzzedMessagesResponsesAndTokenBodiesAre4xxNeverThrowNor5xx) {
  const ModelCatalogue model = thinking_model(true, true);
  const json anthropic = json::parse(R"({"model":"thinker","max_tokens":9,"system":"s","thinking":{"type":"enabled","budget_tokens":1024},
    "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},
    {"type":"text","text":"x"},{"type":"tool_use","id":"u","name":"f","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":"r"}]}],
    "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}})");
  const json responses = json::parse(R"({"model":"thinker","instructions":"i","reasoning":{"effort":"low"},"max_output_tokens":9,
    "input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"r","summary":[],"content":[{"type":"reasoning_text","text":"t"}]},
    {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}],
    "tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"text":{"format":{"type":"text"}}})");
  const json tokenize = json::parse(R"({"content":"hi","add_special":true,"parse_special":false,"with_pieces":true})");
  const json detokenize = json::parse(R"({"tokens":[1,2,3]})");
  std::mt19937 rng(32);
  int accepted = 0;
  int rejected = 0;
  for (int i = 0; i < 6000; ++i) {
    json body = i % 4 == 0 ? anthropic : i % 4 == 1 ? responses : i % 4 == 2 ? tokenize : detokenize;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) mutate(rng, body);
    std::optional<ApiError> error;
    ASSERT_NO_THROW({
      if (i % 4 == 0) {
        auto m = map_anthropic_messages(count_tokens_body(body), model);
        if (auto* e = std::get_if<ApiError>(&m)) {
          error = *e;
        } else if (auto w = to_chat_request(std::get<AnthropicRequest>(m).wire, limits(), anthropic_param_names());
                   std::holds_alternative<ApiError>(w)) {
          error = std::get<ApiError>(w);
        }
      } else if (i % 4 == 1) {
        auto m = map_openai_responses(body, model);
        if (auto* e = std::get_if<ApiError>(&m)) {
          error = *e;
        } else if (auto w = to_chat_request(std::get<OpenAiResponsesRequest>(m).wire, limits(), openai_responses_param_names());
                   std::holds_alternative<ApiError>(w)) {
          error = std::get<ApiError>(w);
        }
      } else if (i % 4 == 2) {
        auto m = map_tokenize(body);
        if (auto* e = std::get_if<ApiError>(&m)) error = *e;
      } else {
        auto m = map_detokenize(body, 512);
        if (auto* e = std::get_if<ApiError>(&m)) error = *e;
      }
    }) << body.dump();
    if (error) {
      ++rejected;
      EXPECT_GE(error->status, 400) << body.dump();
      EXPECT_LT(error->status, 500) << body.dump() << ": " << error->message;
      EXPECT_FALSE(error->message.empty());
    } else {
      ++accepted;
    }
  }
  EXPECT_GT(accepted, 200);
  EXPECT_GT(rejected, 200);
}

}  // namespace
}  // namespace vks::http
