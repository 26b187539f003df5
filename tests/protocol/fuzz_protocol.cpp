// libFuzzer target over the Unix-socket frame decoder and both message parsers. Build with clang
// and -fsanitize=fuzzer (VKS_LIBFUZZER=ON) to fuzz; the ctest protocol_fuzz_driver runs it on
// random and mutated valid frames without clang.
//
// Input layout: byte 0 picks the decoder's max frame size, byte 1 the chunk size used to feed the
// rest, so split reads are exercised too. Invariants checked (abort on violation):
//  - the decoder never buffers more than header + max_frame_bytes, and fails only with
//    frame_too_large / bad_frame;
//  - a request that parses re-encodes to a payload that parses again to the same type and tag;
//  - a server message that parses re-encodes to a payload that parses again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/requests.h"
#include "protocol/responses.h"

namespace {

// Prints what failed and the payload in hex, then aborts (libFuzzer saves the input).
void check(bool ok, const char* what, std::string_view payload = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_protocol invariant failed: %s\npayload:", what);
  for (unsigned char c : payload) std::fprintf(stderr, " %02x", c);
  std::fprintf(stderr, "\n");
  std::abort();
}

void exercise_payload(std::string_view payload, const vks::proto::ProtocolLimits& limits) {
  using namespace vks::proto;
  Result<Request> req = parse_request(payload, limits);
  (void)peek_tag(payload);
  if (req.ok()) {
    const std::string again = encode_request(*req);
    Result<Request> req2 = parse_request(again, limits);
    check(req2.ok(), "re-encoded request does not parse", payload);
    check(req2->body.index() == req->body.index(), "re-encoded request changed type", payload);
    check(req2->tag == req->tag, "re-encoded request changed tag", payload);
  } else {
    check(!req.error().message.empty(), "error without message", payload);
  }
  Result<ServerMessage> msg = parse_server_message(payload);
  if (msg.ok()) {
    const std::string again = encode_message(*msg);
    Result<ServerMessage> msg2 = parse_server_message(again);
    check(msg2.ok(), "re-encoded server message does not parse", payload);
    check(msg2->body.index() == msg->body.index(), "re-encoded server message changed type", payload);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vks::proto;
  if (size < 2) return 0;
  static constexpr uint32_t kMaxSizes[] = {16, 256, 4096, 1u << 20};
  const uint32_t max_frame = kMaxSizes[data[0] % 4];
  const size_t chunk = 1 + data[1] % 64;
  ProtocolLimits limits;
  limits.max_frame_bytes = max_frame;
  limits.max_prompt_tokens = 64;
  limits.max_tokens = 128;

  FrameDecoder decoder(max_frame);
  std::string payload;
  for (size_t pos = 2; pos < size; pos += chunk) {
    const size_t n = std::min(chunk, size - pos);
    const bool ok = decoder.feed(std::span<const uint8_t>(data + pos, n));
    check(decoder.buffered_bytes() <= kFrameHeaderBytes + max_frame, "decoder buffered above the limit");
    if (!ok) {
      check(decoder.error().code == WireError::kFrameTooLarge || decoder.error().code == WireError::kBadFrame,
            "decoder failed with an unexpected code");
      break;
    }
    while (decoder.next(payload)) {
      check(payload.size() <= max_frame, "payload above max_frame_bytes");
      exercise_payload(payload, limits);
    }
  }
  // The whole input as one payload too (the ZeroMQ transport has no length prefix).
  exercise_payload(std::string_view(reinterpret_cast<const char*>(data + 2), size - 2), limits);
  return 0;
}
