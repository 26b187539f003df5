// `vkstream run --model FILE.gguf "prompt"`: loads the model in this process and streams one
// generation to the terminal (no daemon). Vulkan when a device exists, else the CPU reference.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "clients/cli/interrupt.h"
#include "clients/cli/logprobs_print.h"
#include "clients/cli/model_cache.h"
#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"
#include "engine/model/architecture.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace vks::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  SamplingFlags sampling;
  std::string device;
  bool cpu = false;
  bool no_fallback = false;
  bool no_echo = false;
  bool verbose = false;
};

GenerateRequest to_engine_request(const RunArgs& a) {
  // The wire options and the engine's request carry the same fields; map through the wire struct so
  // `run` and `generate` interpret every flag identically.
  vkstream::GenerateOptions o;
  a.sampling.apply(o);
  GenerateRequest r;
  r.prompt_text = a.prompt;
  r.add_bos = o.add_bos.value_or(true);
  if (o.temperature) r.sampling.temperature = static_cast<float>(*o.temperature);
  if (o.top_k) r.sampling.top_k = *o.top_k;
  if (o.top_p) r.sampling.top_p = static_cast<float>(*o.top_p);
  if (o.min_p) r.sampling.min_p = static_cast<float>(*o.min_p);
  if (o.repetition_penalty) r.sampling.repetition_penalty = static_cast<float>(*o.repetition_penalty);
  if (o.presence_penalty) r.sampling.presence_penalty = static_cast<float>(*o.presence_penalty);
  if (o.frequency_penalty) r.sampling.frequency_penalty = static_cast<float>(*o.frequency_penalty);
  if (o.penalty_last_n) r.sampling.penalty_last_n = *o.penalty_last_n;
  for (const auto& [id, bias] : o.logit_bias) r.sampling.logit_bias.emplace_back(id, static_cast<float>(bias));
  r.sampling.seed = o.seed;
  if (o.max_tokens) r.stop.max_tokens = *o.max_tokens;
  if (o.min_tokens) r.stop.min_tokens = *o.min_tokens;
  r.stop.ignore_eos = o.ignore_eos.value_or(false);
  r.stop.stop_token_ids = o.stop_token_ids;
  r.stop.stop_strings = o.stop;
  r.logprobs = o.logprobs.value_or(-1);
  r.grammar = o.grammar.value_or("");
  r.json_schema = o.json_schema.value_or("");
  return r;
}

// Waits for the engine's events (the notifier fires on the engine thread).
class EventWaiter {
 public:
  void notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = true;
    }
    cv_.notify_one();
  }
  void wait_for(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, d, [this] { return ready_; });
    ready_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

int run_local(RunArgs& a) {
  // Engine and runner log through spdlog; keep stdout for the generated text only.
  auto logger = spdlog::stderr_color_st("vkstream");
  logger->set_level(a.verbose ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);

  if (a.prompt == "-") a.prompt = read_all_stdin();
  a.model = resolve_model_or_path(a.model);  // a cached name (see `vkstream pull`) or a path
  std::error_code ec;
  if (!std::filesystem::exists(a.model, ec)) {
    print_error("run: model file '" + a.model + "' does not exist: pass the path of a llama GGUF file with --model");
    return kExitUsage;
  }
  GenerateRequest request = to_engine_request(a);
  const int32_t request_logprobs = request.logprobs;
  std::vector<LogprobRow> logprob_rows;
  try {
    std::unique_ptr<LlamaModel> model = LlamaModel::load(a.model);
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->file());
    RunnerOptions ro;
    ro.device = a.device;
    ro.force_cpu = a.cpu;
    ro.allow_cpu_fallback = !a.no_fallback;
    std::unique_ptr<ModelRunner> runner = make_runner(*model, ro);
    if (a.verbose) std::cerr << "[device: " << runner->device_name() << "]\n";

    EventWaiter waiter;
    Engine engine(std::move(runner), *tokenizer, EngineConfig{});
    engine.set_event_notifier([&waiter] { waiter.notify(); });
    InterruptGuard interrupt;
    const SubmitResult submitted = engine.submit(std::move(request));
    if (!submitted.ok) {
      print_error("run: " + std::string(error_code_name(submitted.code)) + ": " + submitted.message);
      return kExitError;
    }
    if (!a.no_echo) std::cout << a.prompt << std::flush;
    bool cancel_sent = false;
    std::vector<EngineEvent> events;
    for (;;) {
      if (interrupt.interrupted() && !cancel_sent) {
        cancel_sent = true;
        engine.cancel(submitted.id);
      }
      waiter.wait_for(std::chrono::milliseconds(100));
      events.clear();
      engine.poll_events(events);
      for (const EngineEvent& ev : events) {
        if (ev.request_id != submitted.id) continue;
        if (ev.type == EventType::kToken || ev.type == EventType::kFirstToken) {
          std::cout << ev.text << std::flush;
          if (request_logprobs >= 0) {
            for (const GeneratedToken& t : ev.tokens) {
              LogprobRow row{t.id, t.logprob, {}};
              for (const TokenLogprob& alt : t.top) row.top.emplace_back(alt.id, alt.logprob);
              logprob_rows.push_back(std::move(row));
            }
          }
        } else if (ev.type == EventType::kError) {
          std::cout << std::endl;
          print_error("run: generation failed: " + std::string(error_code_name(ev.error_code)) + ": " + ev.error_message);
        } else if (ev.type == EventType::kFinished) {
          std::cout << '\n' << std::flush;
          if (!logprob_rows.empty()) {
            const auto piece = [&](int32_t id) {
              const int32_t one[] = {id};
              return tokenizer->decode(one);
            };
            std::cout << format_logprob_table(logprob_rows, piece) << std::flush;
          }
          if (a.verbose) {
            std::cerr << "[" << finish_reason_name(ev.reason) << ": prompt " << ev.usage.prompt_tokens << ", generated "
                      << ev.usage.generated_tokens << "; TTFT " << ev.timings.ttft_ms << " ms, total "
                      << ev.timings.total_ms << " ms]\n";
          }
          if (cancel_sent) return kExitInterrupted;
          return ev.reason == FinishReason::kError ? kExitError : kExitOk;
        }
      }
    }
  } catch (const Error& e) {
    // Load-time failures: the message names the problem; add what to do about it.
    std::string hint;
    switch (e.code()) {
      case ErrorCode::kCorrupt: hint = " (the file is damaged or not a GGUF: download or convert it again)"; break;
      case ErrorCode::kUnsupported:
        hint = " (vkstream runs " + supported_architecture_names() + " GGUFs with weights in " + supported_ggml_type_names() + ")";
        break;
      case ErrorCode::kIo: hint = " (check the path and its permissions)"; break;
      case ErrorCode::kDevice: hint = " (try --cpu, or check the Vulkan driver with `vkstream devices`)"; break;
      default: break;
    }
    const std::string message = e.what();
    // The loader's messages often already say what to do; add ours only where they do not.
    if (message.find("download") != std::string::npos || message.find("convert") != std::string::npos) hint.clear();
    print_error("run: " + std::string(error_code_name(e.code())) + ": " + message + hint);
    return kExitError;
  }
}

}  // namespace

void add_run_command(CLI::App& root, int& exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = root.add_subcommand("run", "Load a GGUF in this process and stream a generation (no daemon)");
  run->add_option("-m,--model", a->model, "llama GGUF file, or a cached model name (see `vkstream models`)")->required();
  run->add_option("prompt", a->prompt, "prompt text ('-' reads stdin)")->required();
  a->sampling.add_to(*run);
  run->add_option("--device", a->device, "Vulkan device: index or name substring (see `vkstream devices`)");
  run->add_flag("--cpu", a->cpu, "run on the CPU reference, not Vulkan");
  run->add_flag("--no-cpu-fallback", a->no_fallback, "fail instead of using the CPU when no Vulkan device exists");
  run->add_flag("--no-echo", a->no_echo, "do not print the prompt before the generated text");
  run->add_flag("-v,--verbose", a->verbose, "log loading, the device and timings on stderr");
  run->callback([a, &exit_code] { exit_code = guarded("run", [&] { return run_local(*a); }); });
}

}  // namespace vks::cli
