#pragma once
// "Another process busy on one core" (issue 34's loaded machine), switched on and off within one
// run: a child process spinning, stopped with SIGSTOP and resumed with SIGCONT. A bench alternating
// quiet and busy runs with it measures both under the same host conditions; on a shared VM a quiet
// figure moved by 40% within minutes, more than the effect of the spinner it was set against.
#include <sys/types.h>

namespace vks::bench {

class BusySpinner {
 public:
  // Forks the child, stopped. Make it before starting threads (only the spin loop runs in the child).
  BusySpinner();
  ~BusySpinner();  // kills and reaps the child
  BusySpinner(const BusySpinner&) = delete;
  BusySpinner& operator=(const BusySpinner&) = delete;

  // Resumes or stops the child; returns once the signal is sent, after a 50 ms pause in which the
  // scheduler places it.
  void set_busy(bool busy);

 private:
  pid_t child_ = -1;
};

}  // namespace vks::bench
