// HttpRequestParser on its own: one request at a time, pipelining, chunked bodies, limits.
#include <gtest/gtest.h>

#include <random>

#include "server/http/http_request_parser.h"
#include "server/http/json_body.h"

namespace vks::http {
namespace {

TEST(HttpRequestParser, ParsesAGetWithQueryAndLowerCasesHeaderNames) {
  HttpRequestParser p{HttpLimits{}};
  ASSERT_TRUE(p.feed("GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\nX-Custom:  spaced value \r\n\r\n"));
  auto r = p.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/v1/models");
  EXPECT_EQ(r->query, "x=1");
  ASSERT_NE(r->header("x-custom"), nullptr);
  EXPECT_EQ(*r->header("x-custom"), "spaced value");
  EXPECT_TRUE(r->keep_alive);
  EXPECT_FALSE(p.next());
}

TEST(HttpRequestParser, HandsOutPipelinedRequestsOneAtATimeInOrder) {
  HttpRequestParser p{HttpLimits{}};
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    const std::string body = "{\"i\":" + std::to_string(i) + "}";
    bytes += "POST /r" + std::to_string(i) + " HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body;
  }
  ASSERT_TRUE(p.feed(bytes));
  for (int i = 0; i < 3; ++i) {
    auto r = p.next();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->path, "/r" + std::to_string(i));
    EXPECT_EQ(r->body, "{\"i\":" + std::to_string(i) + "}");
  }
  EXPECT_FALSE(p.next());
}

TEST(HttpRequestParser, ByteByByteFeedGivesTheSameRequest) {
  HttpRequestParser p{HttpLimits{}};
  const std::string bytes =
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  for (char ch : bytes) ASSERT_TRUE(p.feed(std::string_view(&ch, 1)));
  auto r = p.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hello world");
}

TEST(HttpRequestParser, HeadersOverTheLimitAre431) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  HttpRequestParser p{limits};
  EXPECT_FALSE(p.feed("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n"));
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->status, 431);
  EXPECT_FALSE(p.next());
}

TEST(HttpRequestParser, DeclaredBodyOverTheLimitIs413BeforeTheBodyArrives) {
  HttpLimits limits;
  limits.max_body_bytes = 100;
  HttpRequestParser p{limits};
  EXPECT_FALSE(p.feed("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"));
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->status, 413);
}

TEST(HttpRequestParser, ChunkedBodyOverTheLimitIs413) {
  HttpLimits limits;
  limits.max_body_bytes = 10;
  HttpRequestParser p{limits};
  EXPECT_FALSE(p.feed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n"));
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->status, 413);
}

TEST(HttpRequestParser, ExpectContinueIsReportedUntilTheBodyStarts) {
  HttpRequestParser p{HttpLimits{}};
  ASSERT_TRUE(p.feed("POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_TRUE(p.wants_continue());
  p.continue_sent();
  EXPECT_FALSE(p.wants_continue());
  ASSERT_TRUE(p.feed("{}"));
  auto r = p.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "{}");
}

TEST(HttpRequestParser, MalformedInputIs400AndOtherVersionsAre505) {
  for (const char* bad : {"GARBAGE\r\n\r\n", "GET / HTTP/1.1\r\nNo colon here\r\n\r\n", "GET  HTTP/1.1\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "GET http://x HTTP/1.1\r\n\r\n"}) {
    HttpRequestParser p{HttpLimits{}};
    EXPECT_FALSE(p.feed(bad)) << bad;
    ASSERT_TRUE(p.failure()) << bad;
    EXPECT_EQ(p.failure()->status, 400) << bad;
  }
  HttpRequestParser p{HttpLimits{}};
  EXPECT_FALSE(p.feed("GET / HTTP/2.0\r\n\r\n"));
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->status, 505);
}

// Issue 37: http-parser's leniencies, which a proxy in front may read differently (RFC 9112).
// Each of these was accepted before.
TEST(HttpRequestParser, WhatRfc9112RejectsIsRejected) {
  const auto failure_of = [](const std::string& bytes) {
    HttpRequestParser p{HttpLimits{}};
    p.feed(bytes);
    while (p.next()) {
    }
    return p.failure() ? *p.failure() : ParseFailure{0, "", ""};
  };
  const std::pair<const char*, int> cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello", 400},    // space before the colon
      {"POST / HTTP/1.1\r\nContent-Length\t: 5\r\n\r\nhello", 400},
      {"GET / HTTP/1.1\r\nX(bad): 1\r\n\r\n", 400},                   // not a token
      {"GET / HTTP/1.1\r\nX\x01: 1\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},                                  // double spaces
      {"GET /  HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1 \r\n\r\n", 400},
      {"GET\t/ HTTP/1.1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
  };
  for (const auto& [bytes, status] : cases) {
    const ParseFailure f = failure_of(bytes);
    EXPECT_EQ(f.status, status) << bytes;
    EXPECT_FALSE(f.message.empty()) << bytes;
  }
  // Fed a byte at a time, the checks hold too, and well-formed requests still parse.
  HttpRequestParser p{HttpLimits{}};
  for (char c : std::string("GET  / HTTP/1.1\r\n\r\n")) p.feed(std::string(1, c));
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->status, 400);
  HttpRequestParser ok{HttpLimits{}};
  for (char c : std::string("\r\nPOST /a?b=c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nX-Ok_1.~: v\r\n\r\n5\r\nhello\r\n0\r\n\r\n")) {
    ASSERT_TRUE(ok.feed(std::string(1, c)));
  }
  auto r = ok.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hello");
}

TEST(HttpRequestParser, RandomBytesNeverCrashAndEndInARequestOrAFailure) {
  std::mt19937 rng(7);
  const std::string seed = "POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = seed;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes.erase(at, 1 + rng() % 4); break;
        default: bytes = bytes.substr(0, at) + static_cast<char>(rng()) + bytes.substr(at); break;  // (insert trips GCC 12's -Wrestrict)
      }
      if (bytes.empty()) bytes.push_back('x');
    }
    HttpRequestParser p{HttpLimits{}};
    p.feed(bytes);
    while (p.next()) {
    }
    if (p.failure()) {
      EXPECT_GE(p.failure()->status, 400);
      EXPECT_FALSE(p.failure()->message.empty());
    }
  }
}

TEST(JsonBody, ChecksMediaTypeSyntaxDepthAndShape) {
  HttpRequest r;
  r.headers.emplace_back("content-type", "text/plain");
  r.body = "{}";
  auto v = parse_json_object(r);
  ASSERT_TRUE(std::holds_alternative<ParseFailure>(v));
  EXPECT_EQ(std::get<ParseFailure>(v).status, 415);

  r.headers.clear();
  r.headers.emplace_back("content-type", "application/json; charset=utf-8");
  for (const std::string& bad : std::vector<std::string>{"{", "[1]", "\"s\"", std::string(100, '[') + std::string(100, ']'), "{\"a\":\"\xff\"}", ""}) {
    r.body = bad;
    auto w = parse_json_object(r);
    ASSERT_TRUE(std::holds_alternative<ParseFailure>(w)) << bad;
    EXPECT_EQ(std::get<ParseFailure>(w).status, 400) << bad;
  }
  r.body = "{\"a\":[1,{\"b\":\"[[[\"}]}";
  auto ok = parse_json_object(r);
  ASSERT_TRUE(std::holds_alternative<JsonBody>(ok));
  EXPECT_EQ(std::get<JsonBody>(ok)["a"][1]["b"], "[[[");
}

}  // namespace
}  // namespace vks::http
