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
