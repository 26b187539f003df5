#include "protocol/frame.h"

#include <algorithm>
#include <cstring>

namespace vks::proto {

void write_frame_header(uint8_t out[kFrameHeaderBytes], uint32_t n) {
  out[0] = static_cast<uint8_t>(n >> 24);
  out[1] = static_cast<uint8_t>(n >> 16);
  out[2] = static_cast<uint8_t>(n >> 8);
  out[3] = static_cast<uint8_t>(n);
}

void append_frame(std::string& out, std::string_view payload) {
  uint8_t header[kFrameHeaderBytes];
  write_frame_header(header, static_cast<uint32_t>(payload.size()));
  out.append(reinterpret_cast<const char*>(header), kFrameHeaderBytes);
  out.append(payload);
}

Result<std::string> encode_frame(std::string_view payload, uint32_t max_frame_bytes) {
  if (payload.size() > max_frame_bytes || payload.size() > UINT32_MAX) {
    return make_error(WireError::kFrameTooLarge, "payload of " + std::to_string(payload.size()) +
                                                     " bytes exceeds max_frame_bytes " + std::to_string(max_frame_bytes));
  }
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  append_frame(out, payload);
  return out;
}

FrameDecoder::FrameDecoder(uint32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

bool FrameDecoder::feed(std::string_view bytes) {
  return feed(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

bool FrameDecoder::feed(std::span<const uint8_t> bytes) {
  size_t pos = 0;
  while (!failed_ && pos < bytes.size()) {
    if (header_fill_ < kFrameHeaderBytes) {
      const size_t take = std::min(kFrameHeaderBytes - header_fill_, bytes.size() - pos);
      std::memcpy(header_ + header_fill_, bytes.data() + pos, take);
      header_fill_ += take;
      pos += take;
      if (header_fill_ < kFrameHeaderBytes) break;
      expected_ = (uint32_t{header_[0]} << 24) | (uint32_t{header_[1]} << 16) | (uint32_t{header_[2]} << 8) |
                  uint32_t{header_[3]};
      if (expected_ > max_frame_bytes_) {
        failed_ = true;
        error_ = make_error(WireError::kFrameTooLarge, "frame of " + std::to_string(expected_) +
                                                           " bytes exceeds max_frame_bytes " + std::to_string(max_frame_bytes_));
        break;
      }
      if (expected_ == 0) {
        failed_ = true;
        error_ = make_error(WireError::kBadFrame, "frame of length 0: expected one msgpack map");
        break;
      }
      partial_.clear();
      // Grow with the bytes that actually arrive: a bare header must not pin max_frame_bytes.
      partial_.reserve(std::min<size_t>(expected_, 64 * 1024));
    }
    const size_t take = std::min<size_t>(expected_ - partial_.size(), bytes.size() - pos);
    partial_.append(reinterpret_cast<const char*>(bytes.data() + pos), take);
    pos += take;
    if (partial_.size() == expected_) {
      frames_.push_back(std::move(partial_));
      partial_ = std::string();
      header_fill_ = 0;
      expected_ = 0;
    }
  }
  return !failed_;
}

bool FrameDecoder::next(std::string& out) {
  if (frames_.empty()) return false;
  out = std::move(frames_.front());
  frames_.pop_front();
  return true;
}

}  // namespace vks::proto
