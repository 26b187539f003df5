#include "engine/cpu/decode_threads.h"

#include <algorithm>

namespace vks {

DecodeThreads::DecodeThreads(int max_threads) : max_threads_(std::max(1, max_threads)), threads_(max_threads_) {}

void DecodeThreads::start_window(int steps) {
  window_steps_ = steps;
  waited_ = 0;
  capacity_ = 0;
}

void DecodeThreads::record(double workers_waited, double wall) {
  waited_ += workers_waited;
  capacity_ += wall * (threads_ - 1);
  if (--window_steps_ > 0) return;
  const bool contended = capacity_ > 0 && waited_ > kShedAbove * capacity_;
  if (probe_from_ > 0) {  // a probe ends: kept unless its workers waited
    if (contended) threads_ = probe_from_;
    probe_from_ = 0;
    steps_to_probe_ = kProbeEvery;
  } else if (contended && threads_ > 1) {
    --threads_;
    steps_to_probe_ = kProbeEvery;
  } else if (threads_ < max_threads_) {
    steps_to_probe_ -= kWindow;
    if (steps_to_probe_ <= 0) {
      probe_from_ = threads_;
      ++threads_;
      return start_window(kProbeWindow);
    }
  }
  start_window(kWindow);
}

}  // namespace vks
