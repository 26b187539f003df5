# Engine benchmarks (owner E): in-process load generator and prefix-cache run.
if(TARGET vks_engine AND TARGET vks_vulkan)
  add_executable(engine_load ${CMAKE_CURRENT_LIST_DIR}/engine_load.cpp)
  target_link_libraries(engine_load PRIVATE vks_engine vks_vulkan vks_model vks_tokenizer CLI11::CLI11 Threads::Threads)
  vks_warnings(engine_load)
endif()
if(TARGET vks_engine)
  add_executable(engine_sampler ${CMAKE_CURRENT_LIST_DIR}/engine_sampler.cpp)
  target_link_libraries(engine_sampler PRIVATE vks_engine CLI11::CLI11)
  vks_warnings(engine_sampler)
endif()
# Prompt-lookup speculative decoding vs plain, alternating in one process (bench/speculative.cpp).
if(TARGET vks_engine AND TARGET vks_vulkan)
  add_executable(vks_bench_speculative ${CMAKE_CURRENT_LIST_DIR}/speculative.cpp)
  target_link_libraries(vks_bench_speculative PRIVATE vks_engine vks_grammar vks_vulkan vks_model vks_tokenizer vks_server CLI11::CLI11
    Threads::Threads)
  vks_warnings(vks_bench_speculative)
endif()
