# Constrained decoding (issue 12): decode tok/s with and without a JSON-schema constraint.
if(TARGET vks_engine AND TARGET vks_vulkan)
  add_executable(constrained_decode ${CMAKE_CURRENT_LIST_DIR}/constrained_decode.cpp)
  target_link_libraries(constrained_decode PRIVATE vks_engine vks_vulkan vks_grammar vks_model vks_tokenizer CLI11::CLI11)
  vks_warnings(constrained_decode)
endif()
