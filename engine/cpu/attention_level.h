#pragma once
// The instruction-set levels ref::attention's loop (engine/cpu/attention_rows.h) is compiled for.
// Every level gives the same bits; attention runs at the highest one the CPU executes unless a
// caller names another (tests compare them).
namespace vks::ref {

enum class AttendLevel {
  kBaseline = 0,  // the target's baseline (x86-64: SSE2)
  kAvx2 = 1,      // 8-float lanes (AVX2 without FMA)
  kAvx512 = 2,    // 16 floats per register: two positions' lanes, or 16 elements of a value row
};

inline const char* attend_level_name(AttendLevel level) {
  switch (level) {
    case AttendLevel::kBaseline: return "baseline";
    case AttendLevel::kAvx2: return "avx2";
    case AttendLevel::kAvx512: return "avx512";
  }
  return "?";
}

// The highest level this CPU executes (read once per process).
inline AttendLevel fastest_attend_level() {
#if defined(__x86_64__)
  static const AttendLevel level = __builtin_cpu_supports("avx512f") ? AttendLevel::kAvx512
                                   : __builtin_cpu_supports("avx2") ? AttendLevel::kAvx2
                                                                    : AttendLevel::kBaseline;
  return level;
#else
  return AttendLevel::kBaseline;
#endif
}

}  // namespace vks::ref
