#pragma once
// Skips a Vulkan test when the machine has no Vulkan device, unless VKSTREAM_REQUIRE_VULKAN=1: then
// the missing device is a failure. CI (lavapipe) and GPU runs set it, so a Vulkan suite cannot pass
// by skipping everything (on a first H100 run a driver that failed to load did exactly that).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace vks::test {

inline bool vulkan_required() {
  const char* v = std::getenv("VKSTREAM_REQUIRE_VULKAN");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace vks::test

// Use where GTEST_SKIP() would be (a void function: a test body or SetUp).
#define VKS_SKIP_WITHOUT_VULKAN(message)                                                        \
  do {                                                                                          \
    if (::vks::test::vulkan_required()) GTEST_FAIL() << "VKSTREAM_REQUIRE_VULKAN=1: " << message; \
    GTEST_SKIP() << message;                                                                    \
  } while (0)
