# Every dependency comes from Debian 12 packages (see .ci/run for the list).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv)
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
find_package(cppzmq REQUIRED)            # cppzmq-dev; brings the libzmq target
find_package(msgpack REQUIRED)           # libmsgpack-cxx-dev: target msgpackc-cxx
find_package(Vulkan REQUIRED)            # libvulkan-dev
find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)  # glslang-tools
find_package(spdlog REQUIRED)            # libspdlog-dev
find_package(CLI11 REQUIRED)             # libcli11-dev
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)   # libpcre2-dev: Unicode regexes (BPE pre-tokenizers)
find_package(nlohmann_json REQUIRED)     # nlohmann-json3-dev: target nlohmann_json::nlohmann_json
pkg_check_modules(LIBCURL REQUIRED IMPORTED_TARGET libcurl)    # libcurl4-openssl-dev: `vkstream pull`
# libhttp-parser-dev ships no pkg-config or CMake file: wrap it in an imported target.
find_path(HTTP_PARSER_INCLUDE_DIR http_parser.h REQUIRED)
find_library(HTTP_PARSER_LIBRARY http_parser REQUIRED)
add_library(vks_http_parser INTERFACE)
target_include_directories(vks_http_parser SYSTEM INTERFACE ${HTTP_PARSER_INCLUDE_DIR})
target_link_libraries(vks_http_parser INTERFACE ${HTTP_PARSER_LIBRARY})
if(VKS_BUILD_TESTS)
  find_package(GTest REQUIRED)           # libgtest-dev
endif()
if(VKS_BUILD_BENCH)
  find_package(benchmark REQUIRED)       # libbenchmark-dev
endif()

# msgpack-cxx 4 wants Boost unless told otherwise; we use none of its Boost parts.
add_library(vks_msgpack INTERFACE)
target_link_libraries(vks_msgpack INTERFACE msgpackc-cxx)
target_compile_definitions(vks_msgpack INTERFACE MSGPACK_NO_BOOST)
