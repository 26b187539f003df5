#include "server/systemd_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

namespace vks::server {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0) watchdog_usec_ = usec;
}

void SystemdNotifier::status(const std::string& text) {
  sd_notify(0, ("STATUS=" + text).c_str());
}

void SystemdNotifier::ready(const std::string& text) {
  sd_notify(0, ("READY=1\nSTATUS=" + text).c_str());
}

void SystemdNotifier::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=shutting down"); }

void SystemdNotifier::start_watchdog(uv_loop_t* loop) {
  if (watchdog_usec_ == 0 || timer_started_) return;
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  const uint64_t period_ms = std::max<uint64_t>(1, watchdog_usec_ / 2000);
  uv_timer_start(&timer_, &SystemdNotifier::on_watchdog, period_ms, period_ms);
  timer_started_ = true;
  sd_notify(0, "WATCHDOG=1");
  spdlog::info("systemd watchdog: WATCHDOG=1 every {} ms", period_ms);
}

void SystemdNotifier::on_watchdog(uv_timer_t* /*timer*/) { sd_notify(0, "WATCHDOG=1"); }

void SystemdNotifier::close_watchdog() {
  if (!timer_started_) return;
  timer_started_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

}  // namespace vks::server
