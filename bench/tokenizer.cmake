# Tokenizer throughput (MB/s) and load time for the SentencePiece and BPE vocabularies.
if(TARGET vks_tokenizer)
  add_executable(tokenizer_bench ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bench.cpp)
  target_link_libraries(tokenizer_bench PRIVATE vks_tokenizer CLI11::CLI11)
  vks_warnings(tokenizer_bench)
endif()
