#include "engine/common/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/common/thread_pool.h"

namespace vks {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t end = text.find(sep, at);
    parts.push_back(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return parts;
    at = end + 1;
  }
}

// The CPUs this process may run on (every online CPU when the mask cannot be read).
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    for (int cpu = 0; cpu < ThreadPool::hardware_threads(); ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

// "package:core" of a CPU from sysfs; empty when unknown.
std::string sysfs_core_of(int cpu) {
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
  const std::string package = trimmed(read_file(dir + "physical_package_id"));
  const std::string core = trimmed(read_file(dir + "core_id"));
  return package.empty() || core.empty() ? std::string() : package + ":" + core;
}

// The CPUs the cgroup quotas on the process's way to the root allow (v2, else v1's cpu controller);
// 0: no quota found.
int quota_cpus() {
  const std::string self = read_file("/proc/self/cgroup");
  const std::string v2 = cgroup_path(self, "");
  if (!v2.empty()) {
    const int cpus = tightest_quota_cpus(v2, [](const std::string& dir) { return read_file("/sys/fs/cgroup" + dir + "/cpu.max"); });
    if (cpus > 0) return cpus;
  }
  const std::string v1 = cgroup_path(self, "cpu");
  if (v1.empty()) return 0;
  for (const std::string mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    const auto cfs_quota = [&mount](const std::string& dir) {
      const std::string quota = trimmed(read_file(mount + dir + "/cpu.cfs_quota_us"));
      return quota.empty() ? quota : quota + " " + trimmed(read_file(mount + dir + "/cpu.cfs_period_us"));
    };
    if (cfs_quota(v1 == "/" ? std::string() : v1).empty()) continue;  // not this mount
    return tightest_quota_cpus(v1, cfs_quota);
  }
  return 0;
}

}  // namespace

int count_physical_cores(const std::vector<int>& cpus, const std::function<std::string(int cpu)>& core_of) {
  std::set<std::string> cores;
  int unknown = 0;
  for (const int cpu : cpus) {
    const std::string key = core_of(cpu);
    if (key.empty()) {
      ++unknown;
    } else {
      cores.insert(key);
    }
  }
  return static_cast<int>(cores.size()) + unknown;
}

int cpus_of_quota(std::string_view quota_and_period) {
  const std::string fields_text = trimmed(std::string(quota_and_period));  // the fields view it
  const std::vector<std::string_view> fields = split(fields_text, ' ');
  if (fields.size() != 2) return 0;
  long long quota = 0, period = 0;
  const auto number = [](std::string_view text, long long& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
  };
  if (!number(fields[0], quota) || !number(fields[1], period) || quota <= 0 || period <= 0) return 0;  // "max", -1
  return static_cast<int>(std::min<long long>((quota + period - 1) / period, 1 << 20));
}

int tightest_quota_cpus(std::string_view path, const std::function<std::string(const std::string& dir)>& quota_of) {
  int tightest = 0;
  std::string dir(path);
  while (!dir.empty() && dir.back() == '/') dir.pop_back();  // the root is ""
  for (;;) {
    const int cpus = cpus_of_quota(quota_of(dir));
    if (cpus > 0 && (tightest == 0 || cpus < tightest)) tightest = cpus;
    if (dir.empty()) return tightest;
    const size_t slash = dir.rfind('/');
    dir.resize(slash == std::string::npos ? 0 : slash);
  }
}

std::string cgroup_path(std::string_view proc_self_cgroup, std::string_view controller) {
  for (const std::string_view line : split(proc_self_cgroup, '\n')) {
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first), controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (controller.empty()) {
      if (id == "0" && controllers.empty()) return std::string(path);
      continue;
    }
    for (const std::string_view c : split(controllers, ',')) {
      if (c == controller) return std::string(path);
    }
  }
  return {};
}

CpuCount default_cpu_threads() {
  const std::vector<int> cpus = allowed_cpus();
  const int cores = count_physical_cores(cpus, sysfs_core_of);
  const int logical = static_cast<int>(cpus.size());
  CpuCount count;
  count.threads = std::max(1, cores);
  count.why = std::to_string(cores) + (cores == 1 ? " physical core" : " physical cores") + " of the " +
              std::to_string(logical) + (logical == 1 ? " logical CPU" : " logical CPUs") + " this process may use";
  const int quota = quota_cpus();
  if (quota > 0 && quota < count.threads) {
    count.threads = quota;
    count.why = std::to_string(quota) + ": the cgroup's CPU quota (" + count.why + ")";
  }
  return count;
}

}  // namespace vks
