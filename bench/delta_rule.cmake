# The gated delta rule per level (engine/cpu/delta_rule.h): nanoseconds per head and token.
if(TARGET vks_cpu)
  add_executable(vks_bench_delta_rule ${CMAKE_CURRENT_LIST_DIR}/delta_rule.cpp)
  target_link_libraries(vks_bench_delta_rule PRIVATE vks_cpu CLI11::CLI11)
  target_include_directories(vks_bench_delta_rule PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_delta_rule)
endif()
