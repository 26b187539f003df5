// CORS decisions without a daemon: loopback origins (any port, http/https) and --http-cors ones are
// allowed, lookalikes are not; preflights get 204 with methods and headers, or 403.
#include <gtest/gtest.h>

#include "server/http/cors.h"

namespace vks::http {
namespace {

HttpRequest with_origin(const std::string& origin, const std::string& method = "POST") {
  HttpRequest r;
  r.method = method;
  if (!origin.empty()) r.headers.emplace_back("origin", origin);
  return r;
}

const std::string* find(const HeaderList& headers, const std::string& name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

TEST(Cors, LoopbackOriginsAndConfiguredOnes) {
  for (const char* ok : {"http://localhost", "http://localhost:3000", "https://127.0.0.1:8443", "http://[::1]:5173"}) {
    EXPECT_EQ(allowed_origin(with_origin(ok), {}), std::optional<std::string>(ok)) << ok;
  }
  for (const char* no : {"http://localhost.evil.example", "http://127.0.0.1.evil.example:80", "https://evil.example",
                         "http://localhost:", "http://localhost:12ab", "null", "file://", "localhost:3000"}) {
    EXPECT_EQ(allowed_origin(with_origin(no), {}), std::nullopt) << no;
  }
  EXPECT_EQ(allowed_origin(with_origin(""), {"*"}), std::nullopt);  // no Origin: not a browser request
  EXPECT_EQ(allowed_origin(with_origin("https://app.example"), {"https://app.example"}), "https://app.example");
  EXPECT_EQ(allowed_origin(with_origin("https://other.example"), {"https://app.example"}), std::nullopt);
  EXPECT_EQ(allowed_origin(with_origin("https://other.example"), {"*"}), "https://other.example");
}

TEST(Cors, PreflightAnswers) {
  HttpRequest pre = with_origin("http://localhost:3000", "OPTIONS");
  EXPECT_FALSE(is_preflight(pre));
  pre.headers.emplace_back("access-control-request-method", "POST");
  EXPECT_TRUE(is_preflight(pre));
  const HttpResponse ok = preflight_response(allowed_origin(pre, {}));
  EXPECT_EQ(ok.status, 204);
  ASSERT_NE(find(ok.headers, "Access-Control-Allow-Origin"), nullptr);
  EXPECT_EQ(*find(ok.headers, "Access-Control-Allow-Origin"), "http://localhost:3000");
  ASSERT_NE(find(ok.headers, "Access-Control-Allow-Headers"), nullptr);
  EXPECT_NE(find(ok.headers, "Access-Control-Allow-Headers")->find("x-api-key"), std::string::npos);
  ASSERT_NE(find(ok.headers, "Access-Control-Allow-Methods"), nullptr);
  EXPECT_NE(find(ok.headers, "Access-Control-Allow-Methods")->find("DELETE"), std::string::npos);  // /api/delete
  const HttpResponse refused = preflight_response(std::nullopt);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(find(refused.headers, "Access-Control-Allow-Origin"), nullptr);
  HeaderList none;
  add_cors_headers(none, std::nullopt);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace vks::http
