// The CPU backend's default thread count: physical cores of the allowed CPUs, held to a cgroup quota.
#include "engine/common/cpu_count.h"

#include <gtest/gtest.h>

#include <map>

namespace vks {
namespace {

TEST(CpuCount, SmtSiblingsAreOneCore) {
  // 4 cores x 2 threads, Linux numbering: CPU n and n + 4 are siblings.
  auto smt = [](int cpu) { return "0:" + std::to_string(cpu % 4); };
  EXPECT_EQ(count_physical_cores({0, 1, 2, 3, 4, 5, 6, 7}, smt), 4);
  EXPECT_EQ(count_physical_cores({0, 4}, smt), 1);  // taskset to one core's two threads
  EXPECT_EQ(count_physical_cores({0, 1, 5}, smt), 2);
  // The same core id on two packages is two cores.
  auto two_sockets = [](int cpu) { return std::to_string(cpu / 2) + ":0"; };
  EXPECT_EQ(count_physical_cores({0, 1, 2, 3}, two_sockets), 2);
  // Unknown topology: every CPU its own core.
  EXPECT_EQ(count_physical_cores({0, 1, 2}, [](int) { return std::string(); }), 3);
  EXPECT_EQ(count_physical_cores({}, smt), 0);
}

TEST(CpuCount, QuotaRoundsUpToWholeCpus) {
  EXPECT_EQ(cpus_of_quota("200000 100000\n"), 2);
  EXPECT_EQ(cpus_of_quota("150000 100000"), 2);
  EXPECT_EQ(cpus_of_quota("50000 100000"), 1);
  EXPECT_EQ(cpus_of_quota("max 100000\n"), 0);
  EXPECT_EQ(cpus_of_quota("-1 100000"), 0);  // cgroup v1: no quota
  for (const char* bad : {"", "\n", "100000", "1 2 3", "abc 100000", "100000 0", "100000 x", "12x 100000"}) {
    EXPECT_EQ(cpus_of_quota(bad), 0) << '"' << bad << '"';
  }
}

TEST(CpuCount, AParentsQuotaHoldsItsChildren) {
  // A slice with a 3-CPU quota, a service below it with none, a scope below that with 6.
  const std::map<std::string, std::string> cpu_max = {
      {"", ""}, {"/system.slice", "300000 100000"}, {"/system.slice/vkstreamd.service", "max 100000"},
      {"/system.slice/vkstreamd.service/x.scope", "600000 100000"}};
  std::vector<std::string> asked;
  const auto quota_of = [&](const std::string& dir) {
    asked.push_back(dir);
    const auto found = cpu_max.find(dir);
    return found == cpu_max.end() ? std::string() : found->second;
  };
  EXPECT_EQ(tightest_quota_cpus("/system.slice/vkstreamd.service/x.scope", quota_of), 3);
  EXPECT_EQ(asked, (std::vector<std::string>{"/system.slice/vkstreamd.service/x.scope", "/system.slice/vkstreamd.service",
                                             "/system.slice", ""}));
  EXPECT_EQ(tightest_quota_cpus("/system.slice/", quota_of), 3);
  EXPECT_EQ(tightest_quota_cpus("/user.slice", quota_of), 0);  // nothing on its way limits it
  EXPECT_EQ(tightest_quota_cpus("/", quota_of), 0);
  // The child's own quota when it is the tighter one.
  const auto child_tighter = [](const std::string& dir) { return dir == "/a/b" ? "100000 100000" : dir == "/a" ? "400000 100000" : ""; };
  EXPECT_EQ(tightest_quota_cpus("/a/b", child_tighter), 1);
  asked.clear();
  EXPECT_EQ(tightest_quota_cpus("relative", quota_of), 0);  // never a path of cgroup_path's, but ends
  EXPECT_EQ(asked, (std::vector<std::string>{"relative", ""}));
}

TEST(CpuCount, FindsTheCgroupPath) {
  const std::string v2 = "0::/system.slice/vkstreamd.service\n";
  EXPECT_EQ(cgroup_path(v2, ""), "/system.slice/vkstreamd.service");
  EXPECT_EQ(cgroup_path(v2, "cpu"), "");
  const std::string hybrid = "12:cpuset:/\n4:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice/x.scope\n0::/user.slice/x.scope\n";
  EXPECT_EQ(cgroup_path(hybrid, "cpu"), "/user.slice");
  EXPECT_EQ(cgroup_path(hybrid, "cpuacct"), "/user.slice");
  EXPECT_EQ(cgroup_path(hybrid, ""), "/user.slice/x.scope");
  EXPECT_EQ(cgroup_path(hybrid, "memory"), "");
  for (const char* bad : {"", "garbage", "0:", "0::", "0::relative", ":::"}) EXPECT_EQ(cgroup_path(bad, ""), "") << bad;
}

TEST(CpuCount, DefaultIsAtLeastOneAndSaysWhy) {
  const CpuCount count = default_cpu_threads();
  EXPECT_GE(count.threads, 1);
  EXPECT_NE(count.why.find("physical core"), std::string::npos) << count.why;
}

}  // namespace
}  // namespace vks
