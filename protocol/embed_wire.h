#pragma once
// The `embed` request and its answer on the wire (docs/PROTOCOL.md 3.11, 4.10). Internal to
// vks_protocol: parse_request / encode_request / encode_answer / parse_server_message call these.
#include "protocol/msgpack_io.h"
#include "protocol/requests.h"
#include "protocol/responses.h"

namespace vks::proto::detail {

// Errors: missing_field (input), invalid_field (both input and tokens, empty or too many inputs,
// wrong types, a bad pooling name, out-of-range priority / deadline_ms / id), prompt_too_long (a
// tokens entry longer than max_prompt_tokens).
Result<EmbedRequest> parse_embed(MapReader& r, const ProtocolLimits& limits);
void encode_embed(MapWriter& w, const EmbedRequest& e);

void encode_embed_answer(MapWriter& w, const EmbedAnswer& a);
bool parse_embed_answer(MapReader& r, EmbedAnswer& a);

// Bytes of an embed answer holding n vectors of dim floats (for the frame limit), an upper bound.
inline size_t embed_answer_bytes(size_t n, size_t dim) { return 256 + n * (5 + dim * 5); }

}  // namespace vks::proto::detail
