#pragma once
// Ctrl-C while a request streams: the first SIGINT asks the daemon (or engine) to cancel the
// request so its finished event still arrives; the second exits at once.
namespace vks::cli {

// Installs the SIGINT handler for the life of the object (restores the previous one after).
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // True once SIGINT arrived (and stays true).
  bool interrupted() const;
  void reset();
};

}  // namespace vks::cli
