#pragma once
// A daemon that ends up on a CPU device (the CPU reference or lavapipe) although the machine has a
// GPU usually lacks permission on /dev/dri/renderD* (a service user outside the render/video
// groups) or a Vulkan driver; say so loudly instead of silently running many times slower.
#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace vks::server {

// The GPU render nodes of this machine (/dev/dri/renderD*), sorted.
std::vector<std::string> gpu_render_nodes(const std::string& dri_dir = "/dev/dri");

// True for the CPU reference runner ("cpu") and CPU Vulkan implementations (lavapipe/llvmpipe, SwiftShader).
// Inline: tests that do not link the server library ask it too.
inline bool is_cpu_device(const std::string& device_name) {
  std::string n = device_name;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return n == "cpu" || n.find("llvmpipe") != std::string::npos || n.find("lavapipe") != std::string::npos ||
         n.find("swiftshader") != std::string::npos;
}

// The warning to log when `device_name` is a CPU device but `render_nodes` is not empty (naming the
// nodes this process cannot open); nullopt when there is nothing to warn about.
std::optional<std::string> cpu_device_warning(const std::string& device_name, const std::vector<std::string>& render_nodes);

}  // namespace vks::server
