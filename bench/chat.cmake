# Chat template benchmarks (owner: chat): render time of a long conversation.
if(TARGET vks_chat)
  add_executable(chat_template_render ${CMAKE_CURRENT_LIST_DIR}/chat_template_render.cpp)
  target_link_libraries(chat_template_render PRIVATE vks_chat nlohmann_json::nlohmann_json CLI11::CLI11)
  vks_warnings(chat_template_render)
endif()

# Tool calls: the incremental parser's cost per token, and probing a template's format.
if(TARGET vks_chat)
  add_executable(tool_call_parser ${CMAKE_CURRENT_LIST_DIR}/tool_call_parser.cpp)
  target_link_libraries(tool_call_parser PRIVATE vks_chat vks_grammar vks_tokenizer vks_gguf nlohmann_json::nlohmann_json CLI11::CLI11)
  vks_warnings(tool_call_parser)
endif()
