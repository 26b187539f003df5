// The CPU reference against the Vulkan runner on the same machine, model by model: the data behind
// the backend rule (engine/vulkan/runner/backend_choice.h) for CPU-type Vulkan devices such as
// lavapipe, where both run on the same cores.
//   vks_bench_backend_choice MODEL.gguf [MODEL2.gguf ...] [--device SEL] [--prompt 32] [--gen 16]
//                            [--rounds 3] [--batch 1] [--context N, default: --prompt]
// For each file both runners are built in this process and their steps alternate (prefill `prompt`
// tokens, then decode at --batch sequences, aggregate tokens/s), so machine load falls on both alike.
// Prints one row per file: weight-matrix MB, each backend's tokens/s from its median step and
// Vulkan / CPU, and the backend a plain start would pick on this device.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/runner_steps.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "engine/vulkan/core/device_info.h"
#include "engine/vulkan/runner/backend_choice.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "engine/vulkan/runner/vulkan_runner.h"

namespace {

double median(const std::vector<double>& v) { return vks::bench::quantile(v, 0.5); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU reference vs Vulkan runner, model by model: the backend rule's data"};
  std::vector<std::string> paths;
  std::string device;
  vks::bench::AlternatingPlan plan{32, 3, 1, 32, 16};  // prompt, rounds, batch, context, gen
  app.add_option("models", paths, "GGUF model files")->required();
  app.add_option("--device", device, "Vulkan device index or name substring");
  vks::bench::add_alternating_options(app, plan, "backend");
  CLI11_PARSE(app, argc, argv);
  if (app.count("--context") == 0) plan.context = plan.prompt;  // decoding sequences start from a prompt

  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    spdlog::set_level(spdlog::level::warn);
    const std::vector<vks::vk::DeviceInfo> devices = vks::vk::list_devices();
    const vks::vk::DeviceInfo picked = devices.at(vks::vk::select_device(devices, device));
    std::printf("device: %s [%s]\n\n", picked.name.c_str(), picked.type_name.c_str());
    std::printf("| %-36s | %9s | %12s | %12s | %8s | %12s | %12s | %8s | %-7s |\n", "model", "matrix MB",
                "CPU prefill", "VK prefill", "VK/CPU", "CPU decode", "VK decode", "VK/CPU", "rule");
    std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(38, '-').c_str(), std::string(11, '-').c_str(),
                std::string(14, '-').c_str(), std::string(14, '-').c_str(), std::string(10, '-').c_str(),
                std::string(14, '-').c_str(), std::string(14, '-').c_str(), std::string(10, '-').c_str(),
                std::string(9, '-').c_str());
    for (const std::string& path : paths) {
      auto model = vks::LlamaModel::load(path);
      const vks::RunnerOptions o = vks::bench::alternating_runner_options(plan, device);
      vks::RunnerOptions cpu_options = o;
      cpu_options.force_cpu = true;
      std::unique_ptr<vks::ModelRunner> cpu = vks::make_runner(*model, cpu_options);
      vks::VulkanRunner vulkan(*model, o);
      vks::bench::StepDriver cpu_driver(*cpu, 42), vulkan_driver(vulkan, 42);
      vks::bench::AlternatingSide t[2];
      t[0].driver = &cpu_driver;
      t[1].driver = &vulkan_driver;
      std::vector<vks::bench::AlternatingSide*> sides{&t[0], &t[1]};
      vks::bench::run_alternating(sides, plan);
      const double mb = vks::bench::matrix_totals(model->weights()).bytes / 1e6;
      const double cpu_pf = plan.prompt / median(t[0].prefill_s), vk_pf = plan.prompt / median(t[1].prefill_s);
      const double cpu_dec = plan.batch / median(t[0].decode_s), vk_dec = plan.batch / median(t[1].decode_s);
      vks::RunnerOptions default_options;  // what a plain `vkstreamd --model FILE` asks for
      const vks::BackendChoice choice =
          vks::choose_backend(&picked, default_options, vks::step_matrix_bytes(model->weights()));
      std::string name = path.substr(path.find_last_of('/') + 1);
      std::printf("| %-36s | %9.1f | %8.1f t/s | %8.1f t/s | %8.2f | %8.1f t/s | %8.1f t/s | %8.2f | %-7s |\n",
                  name.c_str(), mb, cpu_pf, vk_pf, vk_pf / cpu_pf, cpu_dec, vk_dec, vk_dec / cpu_dec,
                  choice.backend == vks::Backend::kCpu ? "CPU" : "Vulkan");
    }
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
