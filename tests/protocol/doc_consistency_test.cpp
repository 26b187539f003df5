// docs/PROTOCOL.md must stay true to the code: every error code, request type, event type, finish
// reason and limit the library knows is documented.
#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <string_view>
#include <sstream>

#include "protocol/errors.h"
#include "protocol/requests.h"
#include "protocol/responses.h"

namespace vks::proto {
namespace {

// Concatenation without operator+ (GCC 12 reports a false -Wrestrict on `"lit" + std::string`).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string read_doc() {
  std::ifstream in(std::string(VKS_SOURCE_DIR) + "/docs/PROTOCOL.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProtocolDoc, ListsEveryErrorCodeInTheTable) {
  const std::string doc = read_doc();
  ASSERT_FALSE(doc.empty());
  for (int32_t k = 0; k < kWireErrorCount; ++k) {
    const std::string row = cat({"| `", wire_error_name(static_cast<WireError>(k)), "` |"});
    EXPECT_NE(doc.find(row), std::string::npos) << "error code missing from the table: " << row;
  }
}

TEST(ProtocolDoc, DocumentsEveryRequestEventAndReason) {
  const std::string doc = read_doc();
  const RequestBody bodies[] = {HelloRequest{}, GenerateMessage{}, CancelRequest{}, StatusRequest{}, StatsRequest{},
                                TokenizeRequest{}, DetokenizeRequest{}, ModelRequest{}, ReplayRequest{}, ChatRequest{},
                                EmbedRequest{}, ModelsRequest{}, LoadRequest{}, UnloadRequest{},
                                PullRequest{}, DeleteRequest{}};
  for (const RequestBody& b : bodies) {
    EXPECT_NE(doc.find(cat({"`", request_type_name(b), "`\n"})), std::string::npos) << request_type_name(b);
  }
  for (auto t : {StreamEventType::kQueued, StreamEventType::kScheduled, StreamEventType::kPreempted,
                 StreamEventType::kToken, StreamEventType::kError, StreamEventType::kFinished, StreamEventType::kToolCall,
                 StreamEventType::kProgress}) {
    EXPECT_NE(doc.find("### 5."), std::string::npos);
    EXPECT_NE(doc.find(cat({"`", stream_event_name(t), "`"})), std::string::npos) << stream_event_name(t);
  }
  for (auto r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kCancelled, FinishReason::kDeadline,
                 FinishReason::kError, FinishReason::kToolCalls}) {
    EXPECT_NE(doc.find(cat({"`\"", finish_reason_wire_name(r), "\"`"})), std::string::npos)
        << finish_reason_wire_name(r);
  }
}

TEST(ProtocolDoc, DocumentsEveryLimitWithItsDefault) {
  const std::string doc = read_doc();
  // Every key of the encoded limits map has a row in section 10 whose default matches the code.
  HelloAnswer h;
  Result<ServerMessage> m = parse_server_message(encode_answer(AnswerBody(h)));
  ASSERT_TRUE(m.ok());
  const ProtocolLimits d;
  const std::pair<const char*, std::string> rows[] = {
      {"max_frame_bytes", std::to_string(d.max_frame_bytes)},
      {"max_requests_per_connection", std::to_string(d.max_requests_per_connection)},
      {"max_output_bytes", std::to_string(d.max_output_bytes)},
      {"max_queued", std::to_string(d.max_queued)},
      {"max_stop_strings", std::to_string(d.max_stop_strings)},
      {"max_stop_string_bytes", std::to_string(d.max_stop_string_bytes)},
      {"max_stop_token_ids", std::to_string(d.max_stop_token_ids)},
      {"max_logit_bias", std::to_string(d.max_logit_bias)},
      {"max_logprobs", std::to_string(d.max_logprobs)},
      {"max_detokenize_ids", std::to_string(d.max_detokenize_ids)},
      {"max_tag_bytes", std::to_string(d.max_tag_bytes)},
      {"max_deadline_ms", std::to_string(d.max_deadline_ms)},
  };
  for (const auto& [key, value] : rows) {
    const std::string row = cat({"| `", key, "` | ", value, " |"});
    EXPECT_NE(doc.find(row), std::string::npos) << "limit row missing or default differs: " << row;
  }
  EXPECT_NE(doc.find("| `max_prompt_tokens` |"), std::string::npos);
  EXPECT_NE(doc.find("| `max_tokens` |"), std::string::npos);
}

}  // namespace
}  // namespace vks::proto
