#pragma once
// A request's own context (the wire's max_context_tokens, Ollama's options.num_ctx): its prompt and
// the tokens it generates together, within the model's KV pool (vkstreamd --ctx-size). The pool is
// sized when the model loads and a request never reloads it: a context larger than the pool is
// refused, naming both figures; a smaller one bounds the request as a smaller pool would (a prompt
// that leaves no room to generate is refused, not cut, and max_tokens is capped at the room left).
#include <cstdint>
#include <optional>

#include "protocol/errors.h"

namespace vks::server {

// `max_tokens`: the request's (0 = until the context is full), capped on success.
std::optional<proto::ProtocolError> bound_to_context(int32_t context, int32_t prompt_tokens, int32_t pool_tokens,
                                                     int32_t& max_tokens);

}  // namespace vks::server
