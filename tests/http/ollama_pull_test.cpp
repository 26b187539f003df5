// Ollama's /api/pull and /api/delete, mapped (server/http/ollama_pull.h): the request body's
// fields and their errors, the NDJSON lines as Ollama streams them, and the HTTP status of each
// failure.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/http/ollama_pull.h"

namespace vks::http {
namespace {

using nlohmann::json;

std::variant<PullCall, ApiError> read(const std::string& text) { return read_pull_call(JsonBody::parse(text)); }

TEST(OllamaPull, ReadsModelOrNameAndStream) {
  const PullCall a = std::get<PullCall>(read(R"({"model":"o/r:Q8_0"})"));
  EXPECT_EQ(a.name, "o/r:Q8_0");
  EXPECT_TRUE(a.stream);  // Ollama's default
  const PullCall b = std::get<PullCall>(read(R"({"name":"o/r","stream":false,"insecure":true})"));
  EXPECT_EQ(b.name, "o/r");
  EXPECT_FALSE(b.stream);
  EXPECT_EQ(std::get<PullCall>(read(R"({"name":"old","model":"new"})")).name, "new");
}

TEST(OllamaPull, BadBodiesAreRefusedWithTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "model"},
      {R"({"model":""})", "model"},
      {R"({"model":3})", "model"},
      {R"({"model":"o/r","stream":"yes"})", "stream"},
      {R"({"model":"o/r","insecure":1})", "insecure"},
  };
  for (const auto& [body, field] : cases) {
    const auto r = read(body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    EXPECT_EQ(std::get<ApiError>(r).status, 400) << body;
    EXPECT_EQ(std::get<ApiError>(r).param, field) << body;
  }
}

TEST(OllamaPull, LinesAreOllamas) {
  EXPECT_EQ(ndjson_line(ollama_pull_status("pulling manifest")), "{\"status\":\"pulling manifest\"}\n");
  const std::string hex(64, 'a');
  const json p = ollama_pull_progress(PullProgress{"sha256:" + hex, "o/r/m.gguf", 10, 100});
  EXPECT_EQ(p, json({{"status", "pulling aaaaaaaaaaaa"}, {"digest", "sha256:" + hex}, {"total", 100}, {"completed", 10}}));
  // A URL's file has no digest: the line names the file.
  const json u = ollama_pull_progress(PullProgress{"", "m.gguf", 0, 0});
  EXPECT_EQ(u, json({{"status", "pulling m.gguf"}, {"total", 0}, {"completed", 0}}));
  EXPECT_EQ(ollama_pull_success_lines(),
            "{\"status\":\"verifying sha256 digest\"}\n{\"status\":\"writing manifest\"}\n{\"status\":\"success\"}\n");
}

TEST(OllamaPull, FailuresHaveTheirStatus) {
  const std::pair<proto::WireError, int> cases[] = {
      {proto::WireError::kNotFound, 404},    {proto::WireError::kInvalidField, 400}, {proto::WireError::kPullFailed, 502},
      {proto::WireError::kOverloaded, 409},  {proto::WireError::kUnsupported, 403}, {proto::WireError::kShuttingDown, 503},
  };
  for (const auto& [code, status] : cases) {
    const ApiError e = ollama_store_error(proto::make_error(code, "why", "model"));
    EXPECT_EQ(e.status, status) << proto::wire_error_name(code);
    EXPECT_EQ(e.message, "why");
  }
}

}  // namespace
}  // namespace vks::http
