#include "server/context_bound.h"

#include <string>

namespace vks::server {

std::optional<proto::ProtocolError> bound_to_context(int32_t context, int32_t prompt_tokens, int32_t pool_tokens,
                                                     int32_t& max_tokens) {
  if (context > pool_tokens) {
    return proto::make_error(proto::WireError::kInvalidField,
                             "max_context_tokens: " + std::to_string(context) + " is more than the model's KV pool holds (" +
                                 std::to_string(pool_tokens) +
                                 " tokens, vkstreamd --ctx-size); a model is not reloaded for a request's context",
                             "max_context_tokens");
  }
  if (prompt_tokens >= context) {
    return proto::make_error(proto::WireError::kPromptTooLong,
                             "max_context_tokens: the prompt's " + std::to_string(prompt_tokens) +
                                 " tokens leave no room to generate in a context of " + std::to_string(context) +
                                 " tokens (at most " + std::to_string(context - 1) + " prompt tokens fit)",
                             "max_context_tokens");
  }
  const int32_t room = context - prompt_tokens;
  if (max_tokens == 0 || max_tokens > room) max_tokens = room;
  return std::nullopt;
}

}  // namespace vks::server
