#include "bench/busy_spinner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace vks::bench {

BusySpinner::BusySpinner() {
  child_ = fork();
  if (child_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child_ == 0) {
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  }
  kill(child_, SIGSTOP);
}

BusySpinner::~BusySpinner() {
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
}

void BusySpinner::set_busy(bool busy) {
  kill(child_, busy ? SIGCONT : SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace vks::bench
