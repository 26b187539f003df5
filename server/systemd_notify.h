#pragma once
// sd_notify messages (STATUS=, READY=1, STOPPING=1) and the WATCHDOG=1 keep-alive timer.
// Every call is a no-op when $NOTIFY_SOCKET is unset.
#include <uv.h>

#include <string>

namespace vks::server {

class SystemdNotifier {
 public:
  SystemdNotifier();
  void status(const std::string& text);
  void ready(const std::string& text);
  void stopping();

  // When the service manager configured a watchdog ($WATCHDOG_USEC), sends WATCHDOG=1 every half
  // period from a timer on `loop`. Call close_watchdog() before the loop shuts down.
  void start_watchdog(uv_loop_t* loop);
  void close_watchdog();
  uint64_t watchdog_usec() const { return watchdog_usec_; }

 private:
  static void on_watchdog(uv_timer_t* timer);
  uint64_t watchdog_usec_ = 0;
  uv_timer_t timer_{};
  bool timer_started_ = false;
};

}  // namespace vks::server
