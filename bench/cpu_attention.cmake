# CPU attention per level (engine/cpu/attention_rows.h): microseconds per call, GB/s of K and V read.
if(TARGET vks_cpu)
  add_executable(vks_bench_cpu_attention ${CMAKE_CURRENT_LIST_DIR}/cpu_attention.cpp)
  target_link_libraries(vks_bench_cpu_attention PRIVATE vks_cpu CLI11::CLI11)
  target_include_directories(vks_bench_cpu_attention PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_cpu_attention)
endif()
