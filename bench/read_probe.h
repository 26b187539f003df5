#pragma once
// A plain-C memory read probe: what the machine's cores can stream, measured in the same run as a
// figure it bounds (decode reads every weight once per token, so its GB/s is set against this).
#include <cstddef>
#include <cstdint>

#include "bench/huge_page_buffer.h"

namespace vks::bench {

// `threads` threads each summing its slice of a 512 MiB buffer of 64-bit words. The buffer has huge
// pages (huge_page_buffer.h): the probe is the ceiling decode is held to. It is filled once, so a
// bench can read the probe beside each of its runs (on a shared VM its readings moved by 9-38%
// within one run of a few minutes: a figure is only comparable with a probe taken next to it).
class ReadProbe {
 public:
  explicit ReadProbe(int threads);
  // GB/s, the best of `passes` reads of the whole buffer.
  double gbs(int passes) const;

 private:
  int threads_;
  HugePageBuffer memory_;
};

// One probe, best of 5.
double read_probe_gbs(int threads);

}  // namespace vks::bench
