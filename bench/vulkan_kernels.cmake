# Vulkan core-kernel micro-benchmark (owner D1): matvec/matmul bandwidth per weight type.
if(TARGET vks_vulkan)
  add_executable(vks_bench_vulkan_kernels ${CMAKE_CURRENT_LIST_DIR}/vulkan_kernels.cpp)
  target_link_libraries(vks_bench_vulkan_kernels PRIVATE vks_bench_ceiling vks_vulkan vks_gguf CLI11::CLI11 spdlog::spdlog)
  target_include_directories(vks_bench_vulkan_kernels PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_vulkan_kernels)
endif()
