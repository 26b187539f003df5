# Cross-builds vkstream for 64-bit ARM Linux on a Debian 12 x86-64 host; the steps and what they
# showed are in docs/ARCHITECTURE.md ("The whole project for aarch64"). In short:
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install g++-aarch64-linux-gnu qemu-user libuv1-dev:arm64 libzmq3-dev:arm64 \
#     libmsgpack-cxx-dev:arm64 libvulkan-dev:arm64 mesa-vulkan-drivers:arm64 libsystemd-dev:arm64 \
#     libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64 libspdlog-dev:arm64 \
#     libfmt-dev:arm64 libpcre2-dev:arm64 libcurl4-openssl-dev:arm64 libhttp-parser2.9:arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The arm64 libraries land in /usr/lib/aarch64-linux-gnu beside the host's (Debian multiarch).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# ctest runs the test binaries under qemu, with the multiarch loader and libraries (-L /): with
# the cross toolchain's own sysroot (/usr/aarch64-linux-gnu) Debian 12's qemu 7.2 loops forever
# inside glibc's pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)

# Libraries from the multiarch paths, headers from the shared /usr/include, programs
# (glslangValidator, node, python3) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# libhttp-parser-dev and glslang-dev cannot be installed for two architectures at once (their arm64
# packages removed the host's, glslang-tools with them): the headers and glslangValidator stay the
# host's, and the library is the runtime package's (libhttp-parser2.9:arm64), named in full.
set(vks_arm64_http_parser /usr/lib/aarch64-linux-gnu/libhttp_parser.so.2.9)
if(NOT EXISTS /usr/lib/aarch64-linux-gnu/libhttp_parser.so AND EXISTS ${vks_arm64_http_parser})
  set(HTTP_PARSER_LIBRARY ${vks_arm64_http_parser} CACHE FILEPATH "arm64 libhttp_parser")
endif()
