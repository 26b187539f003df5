# Device ceilings (issue 13): a library every Vulkan bench links to print its figures as ratios, and
# the probe program on its own.
if(TARGET vks_vulkan)
  add_library(vks_bench_ceiling STATIC ${CMAKE_CURRENT_LIST_DIR}/device_ceiling.cpp)
  target_link_libraries(vks_bench_ceiling PUBLIC vks_vulkan)
  target_include_directories(vks_bench_ceiling PUBLIC ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_ceiling)
  add_executable(vks_bench_device_probe ${CMAKE_CURRENT_LIST_DIR}/device_probe.cpp)
  target_link_libraries(vks_bench_device_probe PRIVATE vks_bench_ceiling CLI11::CLI11)
  vks_warnings(vks_bench_device_probe)
endif()
