#pragma once
// A plain-C memory read probe: what the machine's cores can stream, measured in the same run as a
// figure it bounds (decode reads every weight once per token, so its GB/s is set against this).
namespace vks::bench {

// GB/s of `threads` threads each summing its slice of a 512 MiB buffer of 64-bit words; best of 5.
// The buffer has huge pages (huge_page_buffer.h): the probe is the ceiling decode is held to.
double read_probe_gbs(int threads);

}  // namespace vks::bench
