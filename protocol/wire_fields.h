#pragma once
// Internal: msgpack field layout of the nested structures shared by several server messages
// (event fields, model info, limits, stats), written once and read once.
#include "protocol/msgpack_io.h"
#include "protocol/responses.h"

namespace vks::proto::detail {

void write_event_fields(MapWriter& w, const StreamEvent& ev);
std::string pack_model(const ModelInfo& m);
std::string pack_limits(const ProtocolLimits& l);
std::string pack_stats(const StatsSnapshot& s);

// Readers: false after recording the error in r (field names are prefixed, e.g. "model.dim").
bool read_event(const msgpack::object& map, StreamEventType type, StreamEvent& ev, MapReader& r);
bool read_model(const msgpack::object& map, ModelInfo& m, MapReader& outer);
bool read_limits(const msgpack::object& map, ProtocolLimits& l, MapReader& outer);
bool read_stats(const msgpack::object& map, StatsSnapshot& s, MapReader& outer);

}  // namespace vks::proto::detail
