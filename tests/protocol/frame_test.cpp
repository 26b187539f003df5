#include <gtest/gtest.h>

#include "protocol/frame.h"
#include "protocol/requests.h"
#include "tests/protocol/msgpack_builder.h"

namespace vks::proto {
namespace {

TEST(Frame, EncodesBigEndianLengthAndPayload) {
  const std::string payload = test::pack(test::obj({{"type", test::s("model")}}));
  Result<std::string> frame = encode_frame(payload);
  ASSERT_TRUE(frame.ok());
  // The example in docs/PROTOCOL.md.
  EXPECT_EQ(test::hex(*frame), "00 00 00 0c 81 a4 74 79 70 65 a5 6d 6f 64 65 6c");
}

TEST(Frame, DecodesByteByByte) {
  std::string stream;
  append_frame(stream, "abc");
  append_frame(stream, std::string(300, 'x'));
  append_frame(stream, "z");
  FrameDecoder dec(1024);
  for (char c : stream) ASSERT_TRUE(dec.feed(std::string_view(&c, 1)));
  std::string out;
  ASSERT_TRUE(dec.next(out));
  EXPECT_EQ(out, "abc");
  ASSERT_TRUE(dec.next(out));
  EXPECT_EQ(out, std::string(300, 'x'));
  ASSERT_TRUE(dec.next(out));
  EXPECT_EQ(out, "z");
  EXPECT_FALSE(dec.next(out));
  EXPECT_EQ(dec.buffered_bytes(), 0u);
}

TEST(Frame, DecodesManyFramesInOneChunkAndKeepsPartialTail) {
  std::string stream;
  for (int k = 0; k < 10; ++k) append_frame(stream, std::string(static_cast<size_t>(k + 1), static_cast<char>('a' + k)));
  std::string tail;
  append_frame(tail, "tail-frame");
  stream += tail.substr(0, 7);
  FrameDecoder dec(64);
  ASSERT_TRUE(dec.feed(stream));
  EXPECT_EQ(dec.ready(), 10u);
  EXPECT_EQ(dec.buffered_bytes(), 7u);
  ASSERT_TRUE(dec.feed(std::string_view(tail).substr(7)));
  std::string out;
  for (int k = 0; k < 10; ++k) ASSERT_TRUE(dec.next(out));
  ASSERT_TRUE(dec.next(out));
  EXPECT_EQ(out, "tail-frame");
}

TEST(Frame, RejectsOversizedLengthBeforeBufferingPayload) {
  FrameDecoder dec(100);
  const uint8_t header[] = {0x00, 0x00, 0x00, 101};
  EXPECT_FALSE(dec.feed(std::span<const uint8_t>(header, 4)));
  EXPECT_TRUE(dec.failed());
  EXPECT_EQ(dec.error().code, WireError::kFrameTooLarge);
  EXPECT_NE(dec.error().message.find("101"), std::string::npos);
  // Nothing more is buffered, whatever follows.
  EXPECT_FALSE(dec.feed(std::string(1000, 'x')));
  EXPECT_EQ(dec.ready(), 0u);
  EXPECT_LE(dec.buffered_bytes(), kFrameHeaderBytes);
}

TEST(Frame, RejectsHugeLengthWithoutAllocating) {
  FrameDecoder dec(1 << 20);
  EXPECT_FALSE(dec.feed(std::string("\xff\xff\xff\xff", 4)));
  EXPECT_EQ(dec.error().code, WireError::kFrameTooLarge);
}

TEST(Frame, AcceptsExactlyMaxFrameBytes) {
  FrameDecoder dec(100);
  std::string stream;
  append_frame(stream, std::string(100, 'q'));
  ASSERT_TRUE(dec.feed(stream));
  EXPECT_EQ(dec.ready(), 1u);
}

TEST(Frame, ZeroLengthIsBadFrame) {
  FrameDecoder dec(100);
  EXPECT_FALSE(dec.feed(std::string("\0\0\0\0", 4)));
  EXPECT_EQ(dec.error().code, WireError::kBadFrame);
}

TEST(Frame, TruncatedFrameStaysPending) {
  FrameDecoder dec(100);
  std::string stream;
  append_frame(stream, "0123456789");
  ASSERT_TRUE(dec.feed(std::string_view(stream).substr(0, 9)));
  EXPECT_EQ(dec.ready(), 0u);
  EXPECT_EQ(dec.buffered_bytes(), 9u);
  EXPECT_FALSE(dec.failed());
}

TEST(Frame, EncodeFrameEnforcesLimit) {
  Result<std::string> r = encode_frame(std::string(11, 'a'), 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, WireError::kFrameTooLarge);
  EXPECT_TRUE(encode_frame(std::string(10, 'a'), 10).ok());
}

TEST(Frame, DecodedPayloadParsesAsRequest) {
  std::string stream;
  append_frame(stream, encode_request(RequestBody(StatsRequest{StatsFormat::kPrometheus}), Tag::of(7)));
  FrameDecoder dec;
  ASSERT_TRUE(dec.feed(stream));
  std::string payload;
  ASSERT_TRUE(dec.next(payload));
  Result<Request> req = parse_request(payload, ProtocolLimits{});
  ASSERT_TRUE(req.ok()) << req.error().message;
  EXPECT_EQ(req->tag, Tag::of(7));
  ASSERT_TRUE(std::holds_alternative<StatsRequest>(req->body));
  EXPECT_EQ(std::get<StatsRequest>(req->body).format, StatsFormat::kPrometheus);
}

}  // namespace
}  // namespace vks::proto

namespace vks::proto {
namespace {

TEST(Frame, DocumentedCancelExampleParses) {
  // docs/PROTOCOL.md 12.1, second example.
  const std::string hex = "00 00 00 1b 83 a4 74 79 70 65 a6 63 61 6e 63 65 6c a2 69 64 a5 6a 6f 62 2d 31 a3 74 61 67 07";
  std::string bytes;
  for (size_t k = 0; k < hex.size(); k += 3) bytes.push_back(static_cast<char>(std::stoi(hex.substr(k, 2), nullptr, 16)));
  FrameDecoder dec;
  ASSERT_TRUE(dec.feed(bytes));
  std::string payload;
  ASSERT_TRUE(dec.next(payload));
  Result<Request> r = parse_request(payload, ProtocolLimits{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tag, Tag::of(7));
  EXPECT_EQ(std::get<CancelRequest>(r->body).id, "job-1");
}

}  // namespace
}  // namespace vks::proto
