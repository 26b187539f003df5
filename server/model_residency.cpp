#include "server/model_residency.h"

#include <algorithm>

namespace vks::server {

namespace {

// What the loaded models and the incoming one take from each budget.
struct Usage {
  int32_t count = 0;
  uint64_t host = 0;
  uint64_t device = 0;
  int32_t host_models = 0;    // loaded models holding host memory (the incoming one not counted)
  int32_t device_models = 0;  // loaded models holding some of the device's own heap

  void add(const ResidentModel& m) {
    count += 1;
    host += m.host_bytes;
    device += m.device_bytes;
    host_models += m.host_bytes != 0 ? 1 : 0;
    device_models += m.device_bytes != 0 ? 1 : 0;
  }
  void remove(const ResidentModel& m) {
    count -= 1;
    host -= m.host_bytes;
    device -= m.device_bytes;
    host_models -= m.host_bytes != 0 ? 1 : 0;
    device_models -= m.device_bytes != 0 ? 1 : 0;
  }
};

}  // namespace

std::optional<std::vector<std::string>> evictions_for(const std::vector<ResidentModel>& loaded, const ModelCost& incoming,
                                                      const ResidencyLimits& limits) {
  Usage use;
  for (const ResidentModel& m : loaded) use.add(m);
  use.count += 1;
  use.host += incoming.host_bytes;
  use.device += incoming.device_bytes;
  const int32_t max_loaded = std::max(1, limits.max_loaded);
  auto too_many = [&] { return use.count > max_loaded; };
  auto host_over = [&] { return limits.max_bytes != 0 && use.host > limits.max_bytes; };
  auto device_over = [&] { return limits.max_device_bytes != 0 && use.device > limits.max_device_bytes; };
  auto fits = [&] { return !too_many() && !host_over() && !device_over(); };

  std::vector<const ResidentModel*> evictable;
  for (const ResidentModel& m : loaded) {
    if (!m.pinned && !m.busy) evictable.push_back(&m);
  }
  std::sort(evictable.begin(), evictable.end(),
            [](const ResidentModel* a, const ResidentModel* b) { return a->last_used < b->last_used; });
  std::vector<std::string> out;
  for (const ResidentModel* m : evictable) {
    if (fits()) break;
    // Unloading a model frees only the memory it holds: a host-memory model makes no room on the
    // device, so it stays unless the count needs it gone.
    const bool helps = too_many() || (host_over() && m->host_bytes != 0) || (device_over() && m->device_bytes != 0);
    if (!helps) continue;
    out.push_back(m->name);
    use.remove(*m);
  }
  if (fits()) return out;
  // Only a byte budget is missed, with nothing else left in that memory to make room: the model is
  // tried alone there (its loader reports an allocation it cannot make).
  const bool alone_where_over = (!host_over() || use.host_models == 0) && (!device_over() || use.device_models == 0);
  if (!too_many() && alone_where_over) return out;
  return std::nullopt;
}

std::optional<ResidencyClock::time_point> expiry_of(ResidencyClock::time_point last_used, double keep_alive_s) {
  if (keep_alive_s < 0) return std::nullopt;
  return last_used + std::chrono::duration_cast<ResidencyClock::duration>(std::chrono::duration<double>(keep_alive_s));
}

}  // namespace vks::server
