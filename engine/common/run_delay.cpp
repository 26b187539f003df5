#include "engine/common/run_delay.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace vks {

RunDelay::RunDelay(const std::vector<pid_t>& tids) {
  for (pid_t tid : tids) {
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    available_ = available_ && fd >= 0;
    fds_.push_back(fd);
  }
}

RunDelay::~RunDelay() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

double RunDelay::seconds(size_t n) const {
  double total = 0;
  for (size_t i = 0; i < std::min(n, fds_.size()); ++i) {
    if (fds_[i] < 0) continue;
    char text[128];
    const ssize_t got = pread(fds_[i], text, sizeof text - 1, 0);  // "on-CPU-ns waiting-ns timeslices"
    if (got <= 0) continue;
    text[got] = '\0';
    char* end = nullptr;
    std::strtoull(text, &end, 10);
    total += static_cast<double>(std::strtoull(end, nullptr, 10)) * 1e-9;
  }
  return total;
}

}  // namespace vks
