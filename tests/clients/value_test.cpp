// vkstream::Value: msgpack round trips, hostile msgpack, JSON output.
#include <gtest/gtest.h>

#include <random>

#include "clients/cpp/src/wire.h"
#include "vkstream/errors.h"
#include "vkstream/value.h"

namespace {

using vkstream::Value;

TEST(Value, MsgpackRoundTrip) {
  const Value v = Value::Map{{"a", Value(int64_t{-5})},
                             {"b", Value(uint64_t{18446744073709551615ull})},
                             {"c", Value(1.5)},
                             {"d", Value("text")},
                             {"e", Value(Value::Array{Value(true), Value(), Value(int64_t{3})})},
                             {"f", Value(Value::Map{{"x", Value(false)}})}};
  const Value back = vkstream::detail::unpack_value(vkstream::detail::pack_value(v));
  EXPECT_EQ(back.get_int("a"), -5);
  EXPECT_EQ(back.find("b")->as_uint(), std::optional<uint64_t>(18446744073709551615ull));
  EXPECT_FALSE(back.find("b")->as_int().has_value());  // does not fit int64
  EXPECT_DOUBLE_EQ(back.get_double("c"), 1.5);
  EXPECT_EQ(back.get_string("d"), "text");
  ASSERT_NE(back.find("e")->as_array(), nullptr);
  EXPECT_TRUE((*back.find("e")->as_array())[1].is_nil());
  EXPECT_FALSE(back.find("f")->get_bool("x", true));
  EXPECT_EQ(back.to_json(), v.to_json());
}

TEST(Value, JsonEscapesAndReplacesInvalidUtf8) {
  const Value v = Value::Map{{"t", Value(std::string("a\"b\\c\n\x01\xff\xc3\xa9"))}, {"n", Value(2.0)}};
  EXPECT_EQ(v.to_json(), "{\"t\":\"a\\\"b\\\\c\\n\\u0001\xEF\xBF\xBD\xC3\xA9\",\"n\":2}");
  EXPECT_EQ(Value(std::nan("")).to_json(), "null");
}

TEST(Value, MalformedMsgpackIsAProtocolErrorNeverACrash) {
  std::mt19937 rng(7);
  const std::string good = vkstream::detail::pack_value(Value::Map{
      {"type", Value("token")}, {"ids", Value(Value::Array{Value(1), Value(2)})}, {"text", Value("hello")}});
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bad = good;
    if (i % 2 == 0) {
      bad.resize(rng() % good.size());  // truncated
    } else {
      bad[rng() % bad.size()] = static_cast<char>(rng());  // flipped byte
    }
    try {
      (void)vkstream::detail::unpack_value(bad);
    } catch (const vkstream::ClientError& e) {
      EXPECT_EQ(e.kind(), vkstream::ErrorKind::kProtocol);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 2500);  // every truncation at least
  // A hostile array header claiming 4 billion elements in 5 bytes.
  EXPECT_THROW(vkstream::detail::unpack_value(std::string("\xdd\xff\xff\xff\xff", 5)), vkstream::ClientError);
  // Deep nesting.
  EXPECT_THROW(vkstream::detail::unpack_value(std::string(100, '\x91')), vkstream::ClientError);
}

}  // namespace
