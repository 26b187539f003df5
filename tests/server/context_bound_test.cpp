// A request's own context (Ollama's num_ctx) within the model's KV pool: larger is refused naming
// both figures, a prompt that leaves no room is refused, max_tokens is capped at the room left.
#include <gtest/gtest.h>

#include "server/context_bound.h"

namespace vks::server {
namespace {

TEST(ContextBound, LargerThanThePoolIsRefusedNamingBoth) {
  int32_t max_tokens = 0;
  const auto e = bound_to_context(8192, 10, 4096, max_tokens);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, proto::WireError::kInvalidField);
  EXPECT_EQ(e->field, "max_context_tokens");
  EXPECT_NE(e->message.find("8192"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("4096"), std::string::npos) << e->message;
  EXPECT_EQ(max_tokens, 0);
}

TEST(ContextBound, APromptLeavingNoRoomIsRefused) {
  int32_t max_tokens = 5;
  const auto e = bound_to_context(64, 64, 4096, max_tokens);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, proto::WireError::kPromptTooLong);
  EXPECT_NE(e->message.find("at most 63 prompt tokens"), std::string::npos) << e->message;
  EXPECT_TRUE(bound_to_context(64, 63, 4096, max_tokens) == std::nullopt);
  EXPECT_EQ(max_tokens, 1);
}

TEST(ContextBound, MaxTokensIsCappedAtTheRoomLeft) {
  int32_t unset = 0;
  EXPECT_FALSE(bound_to_context(100, 30, 4096, unset));
  EXPECT_EQ(unset, 70);  // until the request's context is full
  int32_t more = 500;
  EXPECT_FALSE(bound_to_context(100, 30, 100, more));  // the whole pool is a valid context
  EXPECT_EQ(more, 70);
  int32_t fewer = 20;
  EXPECT_FALSE(bound_to_context(100, 30, 4096, fewer));
  EXPECT_EQ(fewer, 20);
}

}  // namespace
}  // namespace vks::server
