#include "protocol/model_fields.h"

namespace vks::proto::detail {

bool read_model_name(MapReader& r, std::string& out, bool required) {
  if (!r.get_string("model", out, required, kMaxModelNameBytes, /*allow_empty=*/false)) return false;
  for (const unsigned char c : out) {
    if (c < 0x20 || c == 0x7f) return r.fail(WireError::kInvalidField, "model", "model names have no control characters");
  }
  return true;
}

bool read_keep_alive(MapReader& r, std::optional<double>& out) {
  if (!r.has("keep_alive")) return true;
  double seconds = 0;
  if (!r.get_double("keep_alive", seconds, true, -kMaxKeepAliveSeconds * 1000, kMaxKeepAliveSeconds)) return false;
  out = seconds < 0 ? -1.0 : seconds;
  return true;
}

void write_model_fields(MapWriter& w, const std::string& model, const std::optional<double>& keep_alive) {
  if (!model.empty()) w.str("model", model);
  if (keep_alive) w.f64("keep_alive", *keep_alive);
}

}  // namespace vks::proto::detail
