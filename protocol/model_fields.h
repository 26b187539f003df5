#pragma once
// The fields that name a served model and how long it stays loaded (`model`, `keep_alive`), read
// and written the same way by every request that carries them (docs/PROTOCOL.md "Models").
#include <optional>
#include <string>

#include "protocol/msgpack_io.h"

namespace vks::proto::detail {

inline constexpr size_t kMaxModelNameBytes = 512;
// keep_alive is seconds; a year and more is "forever" in practice and bounds the arithmetic.
inline constexpr double kMaxKeepAliveSeconds = 365.0 * 24 * 3600;

// `model`: a non-empty printable name of at most kMaxModelNameBytes (absent: "" = the default).
bool read_model_name(MapReader& r, std::string& out, bool required = false);
// `keep_alive`: seconds (integer or float); negative = forever, clamped to -1.
bool read_keep_alive(MapReader& r, std::optional<double>& out);

void write_model_fields(MapWriter& w, const std::string& model, const std::optional<double>& keep_alive);

}  // namespace vks::proto::detail
