// Ollama's keep_alive as the HTTP front end reads it (server/http/keep_alive.h): numbers are
// seconds, strings are Go durations or whole seconds, negative keeps the model, anything else is a 400.
#include <gtest/gtest.h>

#include "server/http/keep_alive.h"
#include "server/http/model_choice.h"

namespace vks::http {
namespace {

double seconds_of(const JsonBody& value) {
  auto parsed = parse_keep_alive(value);
  EXPECT_TRUE(std::holds_alternative<double>(parsed)) << value.dump();
  return std::holds_alternative<double>(parsed) ? std::get<double>(parsed) : -12345.0;
}

void expect_refused(const JsonBody& value) {
  auto parsed = parse_keep_alive(value);
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << value.dump();
  EXPECT_EQ(std::get<ApiError>(parsed).status, 400);
  EXPECT_EQ(std::get<ApiError>(parsed).param, "keep_alive");
  EXPECT_NE(std::get<ApiError>(parsed).message.find("keep_alive"), std::string::npos);
}

TEST(KeepAlive, NumbersAreSeconds) {
  EXPECT_DOUBLE_EQ(seconds_of(300), 300.0);
  EXPECT_DOUBLE_EQ(seconds_of(1.5), 1.5);
  EXPECT_DOUBLE_EQ(seconds_of(0), 0.0);
  EXPECT_DOUBLE_EQ(seconds_of(-1), -1.0);
  EXPECT_DOUBLE_EQ(seconds_of(-3600), -1.0);  // any negative: keep it loaded
}

TEST(KeepAlive, StringsAreGoDurations) {
  EXPECT_DOUBLE_EQ(seconds_of("5m"), 300.0);
  EXPECT_DOUBLE_EQ(seconds_of("1h30m"), 5400.0);
  EXPECT_DOUBLE_EQ(seconds_of("300ms"), 0.3);
  EXPECT_DOUBLE_EQ(seconds_of("10s"), 10.0);
  EXPECT_DOUBLE_EQ(seconds_of("1.5h"), 5400.0);
  EXPECT_DOUBLE_EQ(seconds_of("2h45m30.5s"), 9930.5);
  EXPECT_DOUBLE_EQ(seconds_of("0"), 0.0);
  EXPECT_DOUBLE_EQ(seconds_of("-1"), -1.0);  // not a duration: whole seconds, as Ollama falls back
  EXPECT_DOUBLE_EQ(seconds_of("-1m"), -1.0);
  EXPECT_DOUBLE_EQ(seconds_of("600"), 600.0);
  EXPECT_DOUBLE_EQ(seconds_of("0s"), 0.0);
}

TEST(KeepAlive, AYearIsTheLongestFinite) {
  EXPECT_DOUBLE_EQ(seconds_of("100000h"), 365.0 * 24 * 3600);
  EXPECT_DOUBLE_EQ(seconds_of(1e12), 365.0 * 24 * 3600);
}

TEST(KeepAlive, AnythingElseIsRefused) {
  // "1.5": no unit and not whole seconds, refused as Ollama refuses it.
  for (const char* bad : {"", "5 minutes", "1d", "m", "h5", "1.5", "--1", "5m3", ".s", "1e3s", "forever"}) {
    expect_refused(JsonBody(bad));
  }
  expect_refused(JsonBody(true));
  expect_refused(JsonBody::object());
  expect_refused(JsonBody::array());
  EXPECT_DOUBLE_EQ(seconds_of("5"), 5.0);
}

TEST(KeepAlive, BodyFieldIsOptional) {
  auto absent = read_keep_alive(JsonBody{{"model", "m"}});
  ASSERT_TRUE(std::holds_alternative<std::optional<double>>(absent));
  EXPECT_FALSE(std::get<std::optional<double>>(absent).has_value());
  auto null = read_keep_alive(JsonBody{{"keep_alive", nullptr}});
  ASSERT_TRUE(std::holds_alternative<std::optional<double>>(null));
  EXPECT_FALSE(std::get<std::optional<double>>(null).has_value());
  auto given = read_keep_alive(JsonBody{{"keep_alive", "2m"}});
  ASSERT_TRUE(std::holds_alternative<std::optional<double>>(given));
  EXPECT_DOUBLE_EQ(*std::get<std::optional<double>>(given), 120.0);
}

TEST(ModelChoice, OllamaRequiresAModelOthersDefault) {
  auto ollama = read_model_choice(JsonBody{{"prompt", "x"}}, /*required=*/true, /*keep_alive=*/true);
  ASSERT_TRUE(std::holds_alternative<ApiError>(ollama));
  EXPECT_EQ(std::get<ApiError>(ollama).param, "model");
  auto openai = read_model_choice(JsonBody{{"prompt", "x"}}, false, false);
  ASSERT_TRUE(std::holds_alternative<ModelChoice>(openai));
  EXPECT_EQ(std::get<ModelChoice>(openai).name, "");
  auto not_string = read_model_choice(JsonBody{{"model", 3}}, false, false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(not_string));
  // keep_alive is read only where asked (Ollama's surfaces): OpenAI's ignore it as before.
  auto ignored = read_model_choice(JsonBody{{"model", "a"}, {"keep_alive", "nonsense"}}, false, false);
  ASSERT_TRUE(std::holds_alternative<ModelChoice>(ignored));
  EXPECT_FALSE(std::get<ModelChoice>(ignored).keep_alive.has_value());
}

TEST(ModelChoice, MatchesNameLatestAndGgufName) {
  ModelCatalogue m;
  m.id = "stories260K";
  m.info.name = "Stories 260K";
  EXPECT_TRUE(m.matches("stories260K"));
  EXPECT_TRUE(m.matches("stories260K:latest"));
  EXPECT_TRUE(m.matches("Stories 260K"));
  EXPECT_TRUE(m.matches(""));  // the default
  EXPECT_FALSE(m.matches("stories260K:q4"));
  EXPECT_FALSE(m.matches("other"));
}

}  // namespace
}  // namespace vks::http
