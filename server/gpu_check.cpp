#include "server/gpu_check.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace vks::server {

std::vector<std::string> gpu_render_nodes(const std::string& dri_dir) {
  std::vector<std::string> nodes;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dri_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("renderD", 0) == 0) nodes.push_back(it->path().string());
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

std::optional<std::string> cpu_device_warning(const std::string& device_name, const std::vector<std::string>& render_nodes) {
  if (render_nodes.empty() || !is_cpu_device(device_name)) return std::nullopt;
  std::string nodes, denied;
  for (const std::string& node : render_nodes) {
    nodes += (nodes.empty() ? "" : ", ") + node;
    if (::access(node.c_str(), R_OK | W_OK) != 0) denied += (denied.empty() ? "" : ", ") + node;
  }
  std::string msg = "running on a CPU device (" + device_name + ") although this machine has a GPU (" + nodes + "): ";
  if (!denied.empty()) {
    msg += "uid " + std::to_string(::getuid()) + " cannot open " + denied +
           "; add the daemon's user to the render and video groups (the system unit has SupplementaryGroups=render "
           "video; by hand: usermod -aG render,video USER)";
  } else {
    msg += "no Vulkan driver for it was found or it was not selected; install its Vulkan driver (e.g. "
           "mesa-vulkan-drivers) and check `vkstream devices`, or pass --device";
  }
  return msg;
}

}  // namespace vks::server
