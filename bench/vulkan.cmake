# Vulkan runner benchmark: prefill and (aggregate) decode tokens/s on the chosen device.
if(TARGET vks_vulkan AND TARGET vks_model)
  add_executable(vks_bench_vulkan_runner ${CMAKE_CURRENT_LIST_DIR}/vulkan_runner.cpp)
  target_link_libraries(vks_bench_vulkan_runner PRIVATE vks_bench_ceiling vks_vulkan vks_model CLI11::CLI11 spdlog::spdlog)
  target_include_directories(vks_bench_vulkan_runner PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_vulkan_runner)
endif()
