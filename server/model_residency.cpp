#include "server/model_residency.h"

#include <algorithm>

namespace vks::server {

std::optional<std::vector<std::string>> evictions_for(const std::vector<ResidentModel>& loaded, uint64_t incoming_bytes,
                                                      const ResidencyLimits& limits) {
  uint64_t bytes = incoming_bytes;
  for (const ResidentModel& m : loaded) bytes += m.bytes;
  int32_t count = static_cast<int32_t>(loaded.size()) + 1;
  auto fits = [&] { return count <= std::max(1, limits.max_loaded) && (limits.max_bytes == 0 || bytes <= limits.max_bytes); };
  std::vector<const ResidentModel*> evictable;
  for (const ResidentModel& m : loaded) {
    if (!m.pinned && !m.busy) evictable.push_back(&m);
  }
  std::sort(evictable.begin(), evictable.end(),
            [](const ResidentModel* a, const ResidentModel* b) { return a->last_used < b->last_used; });
  std::vector<std::string> out;
  for (const ResidentModel* m : evictable) {
    if (fits()) break;
    out.push_back(m->name);
    bytes -= m->bytes;
    --count;
  }
  if (fits()) return out;
  // Only the byte budget is missed, with nothing else left loaded to make room: the model is tried
  // alone (its loader reports an allocation it cannot make).
  const bool alone = count == 1;
  if (alone && count <= std::max(1, limits.max_loaded)) return out;
  return std::nullopt;
}

std::optional<ResidencyClock::time_point> expiry_of(ResidencyClock::time_point last_used, double keep_alive_s) {
  if (keep_alive_s < 0) return std::nullopt;
  return last_used + std::chrono::duration_cast<ResidencyClock::duration>(std::chrono::duration<double>(keep_alive_s));
}

}  // namespace vks::server
