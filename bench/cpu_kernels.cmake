# Quantized CPU kernels: matvec GB/s against a memory read probe, GEMM GFLOP/s, speedup over ref::matmul.
if(TARGET vks_cpu)
  add_executable(vks_bench_cpu_kernels ${CMAKE_CURRENT_LIST_DIR}/cpu_kernels.cpp ${CMAKE_CURRENT_LIST_DIR}/read_probe.cpp)
  target_link_libraries(vks_bench_cpu_kernels PRIVATE vks_cpu CLI11::CLI11 Threads::Threads)
  target_include_directories(vks_bench_cpu_kernels PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_cpu_kernels)
endif()
