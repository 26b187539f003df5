# Embeddings (issue 12): embed texts/s alone and while generations decode.
if(TARGET vks_engine AND TARGET vks_vulkan)
  add_executable(embed_throughput ${CMAKE_CURRENT_LIST_DIR}/embed_throughput.cpp)
  target_link_libraries(embed_throughput PRIVATE vks_engine vks_vulkan vks_model vks_tokenizer CLI11::CLI11)
  vks_warnings(embed_throughput)
endif()
