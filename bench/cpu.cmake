# CPU reference benchmark: prefill and decode tokens/s of the CPU model and runner for a GGUF.
if(TARGET vks_cpu)
  add_executable(vks_bench_cpu_reference ${CMAKE_CURRENT_LIST_DIR}/cpu_reference.cpp ${CMAKE_CURRENT_LIST_DIR}/read_probe.cpp
    ${CMAKE_CURRENT_LIST_DIR}/busy_spinner.cpp)
  target_link_libraries(vks_bench_cpu_reference PRIVATE vks_cpu CLI11::CLI11 Threads::Threads)
  target_include_directories(vks_bench_cpu_reference PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_cpu_reference)
endif()

# ThreadPool: what a parallel_for costs beyond its work, after gaps of serial work.
add_executable(vks_bench_thread_pool ${CMAKE_CURRENT_LIST_DIR}/thread_pool.cpp)
target_link_libraries(vks_bench_thread_pool PRIVATE vks_common CLI11::CLI11 Threads::Threads)
target_include_directories(vks_bench_thread_pool PRIVATE ${PROJECT_SOURCE_DIR})
vks_warnings(vks_bench_thread_pool)
