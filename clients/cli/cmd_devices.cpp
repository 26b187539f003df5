// `vkstream devices`: the Vulkan devices this machine has, in the order --device indexes them.
#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "engine/common/cpu_count.h"
#include "engine/cpu/quant/isa.h"
#include "engine/gguf/file_residence.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/backend_choice.h"

namespace vks::cli {
namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Which integer kernels the CPU backend runs here (VKSTREAM_CPU_ISA chooses a lower level, isa.h).
std::string cpu_kernels_summary() {
  const cpuq::CpuIsa active = cpuq::active_isa(), detected = cpuq::detected_isa();
  std::string s = "CPU backend kernels: " + std::string(cpuq::isa_name(active));
  if (active != detected) {
    const std::string name(cpuq::isa_name(detected));
    s += " (this CPU has " + name + ": VKSTREAM_CPU_ISA=" + name + " runs it)";
  }
  return s;
}

// Where the CPU backend reads the weights from (engine/cpu/cpu_weights.h), and what the kernel
// lets it have: without transparent huge pages decode runs at about two thirds of the speed.
std::string cpu_weights_summary() {
  const std::string mode = gguf::transparent_huge_pages_mode();
  std::string s = "CPU backend weights: copied into memory";
  if (mode == "always" || mode == "madvise") return s + " with huge pages (transparent huge pages: " + mode + ")";
  s += ", 4 KiB pages (transparent huge pages: " + (mode.empty() ? std::string("unknown") : mode) + ")";
  if (mode == "never") s += "; `echo madvise > /sys/kernel/mm/transparent_hugepage/enabled` (root) speeds decode up";
  return s;
}

// How many threads the CPU backend runs without --threads, and why that many.
std::string cpu_threads_summary() {
  const CpuCount count = default_cpu_threads();
  return "CPU backend threads: " + std::to_string(count.threads) + " (" + count.why + "; --threads N sets another)";
}

int run_devices(bool json) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  size_t best = devices.size();
  try {
    if (!devices.empty()) best = vk::select_device(devices, "");
  } catch (const std::exception&) {
    // No device with a compute queue: none is marked.
  }
  if (json) {
    vkstream::Value::Array arr;
    for (size_t i = 0; i < devices.size(); ++i) {
      const vk::DeviceInfo& d = devices[i];
      vkstream::Value::Map m{
          {"index", vkstream::Value(int64_t{d.index})},
          {"name", vkstream::Value(d.name)},
          {"type", vkstream::Value(d.type_name)},
          {"driver", vkstream::Value(d.driver)},
          {"api_version", vkstream::Value(vk::api_version_string(d.api_version))},
          {"device_local_bytes", vkstream::Value(d.device_local_bytes)},
          {"max_storage_buffer_range", vkstream::Value(d.max_storage_buffer_range)},
          {"compute", vkstream::Value(d.has_compute_queue)},
          {"integer_dot", vkstream::Value(d.integer_dot)},
          {"integer_dot_accelerated", vkstream::Value(d.integer_dot_accelerated)},
          {"picked", vkstream::Value(i == best)},
      };
      // What a plain start does with the device it picks (naming another one means Vulkan on it).
      if (i == best) m.emplace_back("default_backend", vkstream::Value(backend_rule_summary(d)));
      arr.emplace_back(std::move(m));
    }
    std::cout << vkstream::Value(std::move(arr)).to_json() << '\n';
    return kExitOk;
  }
  if (devices.empty()) {
    std::cout << "no Vulkan device found: vkstream runs on its CPU backend (a GPU's Vulkan driver, e.g. "
                 "mesa-vulkan-drivers for AMD and Intel, lets it use the GPU)\n"
              << cpu_kernels_summary() << '\n'
              << cpu_threads_summary() << '\n'
              << cpu_weights_summary() << '\n';
    return kExitOk;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    const vk::DeviceInfo& d = devices[i];
    std::cout << (i == best ? "* " : "  ") << d.index << ": " << d.name << " [" << d.type_name << "] Vulkan "
              << vk::api_version_string(d.api_version) << ", " << d.driver << ", device-local "
              << mib(d.device_local_bytes) << ", max storage buffer " << mib(d.max_storage_buffer_range)
              << (d.integer_dot ? (d.integer_dot_accelerated ? ", int8 dot (accelerated)" : ", int8 dot") : "")
              << (d.halves_by_integer_steps ? ", halves by integer steps (its unpackHalf2x16 is wrong)" : "")
              << (d.has_compute_queue ? "" : ", no compute queue") << '\n';
  }
  std::cout << "(* = picked by default; choose another with --device INDEX or a name substring, "
               "or VKSTREAM_DEVICE)\n";
  if (best < devices.size()) std::cout << "default backend: " << backend_rule_summary(devices[best]) << '\n';
  std::cout << cpu_kernels_summary() << '\n' << cpu_threads_summary() << '\n' << cpu_weights_summary() << '\n';
  return kExitOk;
}

}  // namespace

void add_devices_command(CLI::App& root, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* d = root.add_subcommand("devices", "List the Vulkan devices of this machine");
  d->add_flag("--json", *json, "print the list as JSON");
  d->callback([json, &exit_code] { exit_code = guarded("devices", [&] { return run_devices(*json); }); });
}

}  // namespace vks::cli
