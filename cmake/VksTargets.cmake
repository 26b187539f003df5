# Helpers so every target of ours gets the same warnings and layout.
set(VKS_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wunused -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough)
if(VKS_WERROR)
  list(APPEND VKS_WARNINGS -Werror)
  # GCC 12 for aarch64 inlines differently at -O3 and then sees a "potential null pointer
  # dereference" inside libstdc++'s own shared_ptr and vector destructors (jinja::Value, a copied
  # vector<vector<float>>); none is in our code, so on aarch64 it stays a warning.
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND VKS_WARNINGS -Wno-error=null-dereference)
  endif()
endif()

# Project root, so tests can find ../shared/models by default.
set(VKS_SOURCE_DIR ${PROJECT_SOURCE_DIR})

# Environment of every test. lavapipe compiles each pipeline at its first dispatch; sharing Mesa's
# on-disk shader cache across the test processes of one build pays that once per kernel instead of
# once per test binary (a cold CI machine otherwise spends minutes recompiling the same shaders).
set(VKS_TEST_ENVIRONMENT "VKSTREAM_BUILD_DIR=${PROJECT_BINARY_DIR}"
    "MESA_SHADER_CACHE_DIR=${PROJECT_BINARY_DIR}/mesa-shader-cache")

# Test sources (not the libraries they test) are compiled without optimization: a test's time goes to
# the libraries, built with the build type's flags, and to waiting on daemons, while optimizing
# GoogleTest's and nlohmann-json's templates in every test was 45% of a Release build's compile time.
set(VKS_TEST_OPTIMIZATION "-O0" CACHE STRING "Optimization flag for test sources; empty keeps the build type's")

function(vks_warnings target)
  target_compile_options(${target} PRIVATE ${VKS_WARNINGS})
endfunction()

# Precompiled headers shared by many small programs (the tests, the benchmarks): every test parses
# GoogleTest, every benchmark CLI11, and that parse was a quarter to a half of each one's compile.
# vks_add_pch(name HEADERS ... DEPS ... OPTIONS ...) builds the header once; vks_use_pch(target name)
# makes a target reuse it. GCC accepts a reused header only when the consumer defines every macro the
# header was built with, so the holder links only what gives the headers' include paths and keeps
# its definitions to a minimum; -Werror turns a rejected header into a build error, not a silent
# slowdown.
option(VKS_PCH "Share precompiled headers between the tests and between the benchmarks" ON)

function(vks_add_pch name)
  cmake_parse_arguments(A "" "" "HEADERS;DEPS;OPTIONS" ${ARGN})
  if(NOT VKS_PCH)
    return()
  endif()
  set(anchor ${CMAKE_CURRENT_BINARY_DIR}/${name}_anchor.cpp)
  file(CONFIGURE OUTPUT ${anchor} CONTENT "// Holds the precompiled header ${name}.\n")
  add_library(${name} OBJECT ${anchor})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  target_compile_options(${name} PRIVATE ${A_OPTIONS})
  target_precompile_headers(${name} PRIVATE ${A_HEADERS})
  vks_warnings(${name})
endfunction()

function(vks_use_pch target name)
  if(VKS_PCH AND TARGET ${name})
    target_precompile_headers(${target} REUSE_FROM ${name})
  endif()
endfunction()

# Fuzzing build (-DVKS_LIBFUZZER=ON with clang): coverage-instrument a library's code for libFuzzer
# and check it with ASan+UBSan; the fuzz targets that link it pick up the sanitizer runtime.
function(vks_fuzz_instrument target)
  if(VKS_LIBFUZZER)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()

# vks_add_library(name SOURCES ... DEPS ...): static library whose include root is the project root,
# so headers are included as "engine/gguf/gguf_file.h".
function(vks_add_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(${name} PUBLIC ${A_DEPS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  vks_warnings(${name})
endfunction()

# vks_add_test(name SOURCES ... DEPS ... LABELS ... [OPTIMIZED]): a GoogleTest binary registered with ctest.
# Labels: unit (fast, no device), vulkan (needs a Vulkan device, lavapipe in CI), e2e (real daemon),
# asan (also run in the ASan+UBSan build).
function(vks_add_test name)
  cmake_parse_arguments(A "OPTIMIZED" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${VKS_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 8)
  target_link_libraries(${name} PRIVATE ${A_DEPS} vks_test_support GTest::gtest GTest::gtest_main)
  vks_warnings(${name})
  if(NOT A_OPTIMIZED)  # OPTIMIZED: the test itself computes heavy references; keep the build type's flags
    target_compile_options(${name} PRIVATE ${VKS_TEST_OPTIMIZATION})
    vks_use_pch(${name} vks_test_pch)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
    ENVIRONMENT "${VKS_TEST_ENVIRONMENT}")
endfunction()
