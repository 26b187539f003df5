#pragma once
// How many threads the CPU backend runs by default: one per physical core this process may run on.
//
// A core's second hardware thread (SMT) shares its load/store units and caches: for the integer
// matrix kernels it adds little and steals from its sibling (llama.cpp defaults to physical cores for
// the same reason). The process may also be held to fewer CPUs than the machine has: an affinity
// mask (taskset, systemd's CPUAffinity=) or a cgroup CPU quota (systemd's CPUQuota=, a container's
// --cpus). More threads than that only take turns.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vks {

struct CpuCount {
  int threads = 1;  // at least 1
  std::string why;  // for the log and `vkstream devices`, e.g. "4 physical cores of 8 logical CPUs"
};

// The threads the CPU backend runs when none are asked for (reads sysfs, /proc and the cgroup;
// anything unreadable counts as no limit).
CpuCount default_cpu_threads();

// The physical cores among `cpus`: CPUs whose core_of keys are equal are one core; an empty key
// (the topology is unknown) makes the CPU a core of its own.
int count_physical_cores(const std::vector<int>& cpus, const std::function<std::string(int cpu)>& core_of);

// The CPUs a CPU quota allows, rounded up: cgroup v2's `cpu.max` text ("max 100000", "150000 100000")
// or cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us joined by a space ("-1 100000" is none); 0
// when it sets no limit or cannot be read as one.
int cpus_of_quota(std::string_view quota_and_period);

// The tightest quota, in CPUs, from cgroup `path` ("/a/b") up to the root: a parent's quota holds its
// children too (systemd's CPUQuota= on a slice, a container around a nested cgroup). `quota_of` gives a
// directory's cpus_of_quota text ("" for the root); 0 when none on the way sets a limit.
int tightest_quota_cpus(std::string_view path, const std::function<std::string(const std::string& dir)>& quota_of);

// The cgroup path in /proc/self/cgroup's text of cgroup v2 (controller "": the "0::/path" line) or
// of the cgroup v1 hierarchy whose controller list holds `controller` ("4:cpu,cpuacct:/path");
// empty when there is none.
std::string cgroup_path(std::string_view proc_self_cgroup, std::string_view controller);

}  // namespace vks
