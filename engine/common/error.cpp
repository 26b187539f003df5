#include "engine/common/error.h"

namespace vks {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kCorrupt: return "corrupt";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out_of_memory";
    case ErrorCode::kOverloaded: return "overloaded";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kDeadlineExceeded: return "deadline_exceeded";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kDevice: return "device";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace vks
