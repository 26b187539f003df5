#pragma once
// Unix-socket framing: every frame is a 4-byte big-endian payload length N followed by N bytes
// holding one msgpack map. The decoder is incremental (feed whatever read() returned) and rejects
// a length above max_frame_bytes as soon as the 4 header bytes are in, before buffering any of the
// payload; after such an error the stream cannot be resynchronised and the connection must close.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/errors.h"

namespace vks::proto {

inline constexpr size_t kFrameHeaderBytes = 4;

// Header + payload, ready to write. Fails (frame_too_large) when payload exceeds max_frame_bytes.
Result<std::string> encode_frame(std::string_view payload, uint32_t max_frame_bytes = UINT32_MAX);
// Appends header + payload to out (no size check beyond 32 bits; use for trusted server output).
void append_frame(std::string& out, std::string_view payload);
// The 4-byte big-endian header for a payload of n bytes.
void write_frame_header(uint8_t out[kFrameHeaderBytes], uint32_t n);

class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_frame_bytes = 1u << 20);

  // Consumes bytes. Complete payloads become available through next(). Returns false once the
  // decoder failed (frame_too_large, or empty frame: length 0 is bad_frame); it then ignores
  // further input and error() says why.
  bool feed(std::span<const uint8_t> bytes);
  bool feed(std::string_view bytes);

  // Pops the next complete payload (without its header) into out; false when none is ready.
  bool next(std::string& out);
  size_t ready() const { return frames_.size(); }

  bool failed() const { return failed_; }
  const ProtocolError& error() const { return error_; }

  // Bytes held for an incomplete frame (header bytes + partial payload); never above
  // kFrameHeaderBytes + max_frame_bytes.
  size_t buffered_bytes() const { return header_fill_ + partial_.size(); }
  uint32_t max_frame_bytes() const { return max_frame_bytes_; }

 private:
  uint32_t max_frame_bytes_;
  uint8_t header_[kFrameHeaderBytes] = {};
  size_t header_fill_ = 0;
  uint32_t expected_ = 0;   // payload bytes of the frame being read (valid once header is full)
  std::string partial_;
  std::deque<std::string> frames_;
  bool failed_ = false;
  ProtocolError error_;
};

}  // namespace vks::proto
