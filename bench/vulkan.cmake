# Vulkan runner benchmarks: prefill and (aggregate) decode tokens/s on the chosen device, and two
# models step for step on one device (their same-run ratio), and an MoE model's CPU/GPU expert splits.
if(TARGET vks_vulkan AND TARGET vks_model)
  add_library(vks_bench_runner_steps STATIC ${CMAKE_CURRENT_LIST_DIR}/runner_steps.cpp)
  target_link_libraries(vks_bench_runner_steps PUBLIC vks_vulkan vks_model CLI11::CLI11)
  target_include_directories(vks_bench_runner_steps PUBLIC ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_runner_steps)

  add_executable(vks_bench_vulkan_runner ${CMAKE_CURRENT_LIST_DIR}/vulkan_runner.cpp)
  target_link_libraries(vks_bench_vulkan_runner PRIVATE vks_bench_ceiling vks_bench_runner_steps CLI11::CLI11 spdlog::spdlog)
  vks_warnings(vks_bench_vulkan_runner)

  add_executable(vks_bench_kv_quality ${CMAKE_CURRENT_LIST_DIR}/kv_quality.cpp)
  target_link_libraries(vks_bench_kv_quality PRIVATE vks_vulkan vks_model CLI11::CLI11 spdlog::spdlog)
  target_include_directories(vks_bench_kv_quality PRIVATE ${PROJECT_SOURCE_DIR})
  vks_warnings(vks_bench_kv_quality)

  add_executable(vks_bench_vulkan_versus ${CMAKE_CURRENT_LIST_DIR}/vulkan_versus.cpp)
  target_link_libraries(vks_bench_vulkan_versus PRIVATE vks_bench_runner_steps CLI11::CLI11 spdlog::spdlog)
  vks_warnings(vks_bench_vulkan_versus)

  # An MoE model with N expert layers' experts on the CPU (--cpu-experts), N against N step for step.
  add_executable(vks_bench_cpu_experts ${CMAKE_CURRENT_LIST_DIR}/cpu_experts.cpp)
  target_link_libraries(vks_bench_cpu_experts PRIVATE vks_bench_runner_steps CLI11::CLI11 spdlog::spdlog)
  vks_warnings(vks_bench_cpu_experts)
endif()

# CPU reference vs Vulkan runner per model: the backend rule's crossover.
if(TARGET vks_vulkan AND TARGET vks_model)
  add_executable(vks_bench_backend_choice ${CMAKE_CURRENT_LIST_DIR}/backend_choice.cpp)
  target_link_libraries(vks_bench_backend_choice PRIVATE vks_bench_runner_steps CLI11::CLI11 spdlog::spdlog)
  vks_warnings(vks_bench_backend_choice)
endif()
