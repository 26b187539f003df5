# cmake -DSPV=<file.spv> -DNAME=<kernel name> -DOUT=<file.cpp> -P embed_spirv.cmake
# Writes the SPIR-V words of one shader as a C++ array (words in host byte order, as glslang wrote).
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0 OR n EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a whole number of 32-bit words")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n" words "${words}")
math(EXPR count "${n} / 8")
file(WRITE ${OUT}.tmp "// Generated from ${SPV}: do not edit.\n#include <cstddef>\n#include <cstdint>\n"
  "namespace vks::vk::spirv {\nextern const uint32_t k_${NAME}[];\nextern const size_t k_${NAME}_words;\n"
  "const uint32_t k_${NAME}[] = {\n${words}};\nconst size_t k_${NAME}_words = ${count};\n}  // namespace vks::vk::spirv\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
