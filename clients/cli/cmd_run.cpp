// `vkstream run --model FILE.gguf "prompt"`: loads the model in this process and streams one
// generation to the terminal (no daemon). Vulkan on a GPU, else the CPU backend.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "clients/cli/interrupt.h"
#include "clients/cli/logprobs_print.h"
#include "clients/cpp/src/wire.h"
#include "engine/common/error.h"
#include "engine/gguf/ggml_type.h"
#include "engine/model/architecture.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vulkan/runner/expert_split.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "protocol/responses.h"
#include "protocol/value_codec.h"
#include "server/engine_translation.h"
#include "store/model_cache.h"

namespace vks::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  SamplingFlags sampling;
  std::string device;
  bool cpu = false;
  bool no_fallback = false;
  bool vulkan = false;
  std::string cpu_experts = "auto";  // RunnerOptions::cpu_expert_layers as vks::vk::parse_cpu_expert_layers reads it
  int threads = 0;                   // RunnerOptions::cpu_threads
  bool no_echo = false;
  bool verbose = false;
  bool json = false;
  int32_t speculative = 0;  // --speculative [N]: prompt-lookup drafts of up to N tokens (greedy only)
};

GenerateRequest to_engine_request(const RunArgs& a) {
  // `run` and `generate` interpret every flag identically: the flags fill the client's options,
  // which map to the wire request (clients/cpp) and from there to the engine's through the one
  // translation the daemon uses (server/engine_translation).
  vkstream::GenerateOptions o;
  a.sampling.apply(o);
  o.prompt = a.prompt;
  return vks::to_engine_request(vkstream::detail::to_wire(o));
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

// Loading takes seconds (file, device upload, kernel compilation): on a terminal (or with -v) each
// stage is shown on stderr as it starts, with its time when it ends.
class LoadProgress {
 public:
  explicit LoadProgress(bool shown) : shown_(shown) {}
  void begin(const std::string& stage) {
    if (shown_) std::cerr << stage << "... " << std::flush;
    started_ = std::chrono::steady_clock::now();
  }
  void end() {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    total_s_ += s;
    if (!shown_) return;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s\n", s);
    std::cerr << buf << std::flush;
  }
  bool shown() const { return shown_; }
  double total_s() const { return total_s_; }

 private:
  bool shown_;
  std::chrono::steady_clock::time_point started_;
  double total_s_ = 0;
};

// One line a user reads to know what runs where: model, shape, context, device, load time.
std::string load_summary(const std::string& path, const LlamaConfig& c, const std::string& device, double load_s) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", load_s);
  return "[" + std::filesystem::path(path).filename().string() + ": " + c.architecture + ", " +
         std::to_string(c.n_layers) + " layers, dim " + std::to_string(c.dim) + ", vocab " +
         std::to_string(c.vocab_size) + ", context " + std::to_string(c.context_length) + "; device " + device +
         "; loaded in " + secs + "]";
}

// --json: the same JSON lines as `vkstream generate --json` (the wire event, rendered by the
// server's own translation).
void print_json_event(const EngineEvent& ev, int64_t seq, bool with_logprobs) {
  const proto::Result<proto::Value> v = proto::unpack_value(encode_engine_event(ev, seq, with_logprobs));
  if (v) std::cout << v->to_json() << '\n' << std::flush;
}

int run_local(RunArgs& a) {
  // Engine and runner log through spdlog; keep stdout for the generated text only.
  auto logger = spdlog::stderr_color_st("vkstream");
  logger->set_level(a.verbose ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);

  if (a.prompt == "-") a.prompt = read_all_stdin();
  a.model = store::resolve_model_or_path(a.model);  // a cached name (see `vkstream pull`) or a path
  std::error_code ec;
  if (!std::filesystem::exists(a.model, ec)) {
    print_error("run: model file '" + a.model + "' does not exist: pass the path of a llama GGUF file with --model");
    return kExitUsage;
  }
  GenerateRequest request = to_engine_request(a);
  const int32_t request_logprobs = request.logprobs;
  std::vector<LogprobRow> logprob_rows;
  LoadProgress progress(a.verbose || ::isatty(STDERR_FILENO) == 1);
  try {
    progress.begin("loading " + a.model);
    std::unique_ptr<LlamaModel> model = LlamaModel::load(a.model);
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->file());
    progress.end();
    RunnerOptions ro;
    ro.device = a.device;
    ro.force_cpu = a.cpu;
    ro.allow_cpu_fallback = !a.no_fallback;
    ro.force_vulkan = a.vulkan;
    ro.cpu_expert_layers = vk::parse_cpu_expert_layers(a.cpu_experts);
    ro.cpu_threads = a.threads;
    ro.warm_up = true;  // kernels compile here, inside the shown stage, not before the first token
    progress.begin("uploading the weights and compiling the kernels");
    std::unique_ptr<ModelRunner> runner = make_runner(*model, ro);
    progress.end();
    if (progress.shown()) std::cerr << load_summary(a.model, model->config(), runner->device_name(), progress.total_s()) << '\n';

    EventWaiter waiter;
    EngineConfig engine_config;
    engine_config.speculative_draft = a.speculative;
    Engine engine(std::move(runner), *tokenizer, engine_config);
    engine.set_event_notifier([&waiter] { waiter.notify(); });
    InterruptGuard interrupt;
    const SubmitResult submitted = engine.submit(std::move(request));
    if (!submitted.ok) {
      print_error("run: " + std::string(error_code_name(submitted.code)) + ": " + submitted.message);
      return kExitError;
    }
    if (a.json) {
      proto::AcceptedAnswer accepted;
      accepted.id = submitted.id;
      accepted.prompt_tokens = submitted.prompt_tokens;
      const proto::Result<proto::Value> v = proto::unpack_value(proto::encode_answer(accepted));
      if (v) std::cout << v->to_json() << '\n' << std::flush;
    } else if (!a.no_echo) {
      std::cout << a.prompt << std::flush;
    }
    int64_t seq = 0;
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
        if (a.json) {
          // A progress event takes no seq (docs/PROTOCOL.md 5.8): the others keep the daemon's numbers.
          print_json_event(ev, ev.type == EventType::kProgress ? -1 : seq++, request_logprobs >= 0);
          if (ev.type == EventType::kFinished) {
            if (cancel_sent) return kExitInterrupted;
            return ev.reason == FinishReason::kError ? kExitError : kExitOk;
          }
          continue;
        }
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
            // The token's own bytes: decode() would drop a SentencePiece piece's leading space.
            const auto piece = [&](int32_t id) { return tokenizer->token_bytes(id); };
            std::cout << format_logprob_table(logprob_rows, piece) << std::flush;
          }
          if (a.verbose) {
            std::cerr << "[" << finish_reason_name(ev.reason) << ": prompt " << ev.usage.prompt_tokens << ", generated "
                      << ev.usage.generated_tokens << "; TTFT " << ev.timings.ttft_ms << " ms, total "
                      << ev.timings.total_ms << " ms";
            if (a.speculative > 0) {
              std::cerr << "; drafted " << ev.timings.draft_tokens << ", accepted " << ev.timings.accepted_tokens;
            }
            std::cerr << "]\n";
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
  CLI::Option* cpu = run->add_flag("--cpu", a->cpu, "run on the CPU backend, not Vulkan");
  run->add_flag("--vulkan", a->vulkan, "run on Vulkan even where the CPU backend is the default (a CPU-type "
                                        "device such as lavapipe: see `vkstream devices`); fail without a device")
      ->excludes(cpu);
  run->add_flag("--no-cpu-fallback", a->no_fallback, "fail instead of using the CPU when no Vulkan device exists");
  run->add_option("--threads", a->threads, "threads of the CPU backend (0 = one per physical core this process may use)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  run->add_option("--cpu-experts", a->cpu_experts,
                  "mixture-of-experts models on a GPU: the experts of the first N expert layers stay in host memory "
                  "and run on the CPU (all; auto: as many as the GPU's memory needs)")
      ->capture_default_str();
  run->add_flag("--no-echo", a->no_echo, "do not print the prompt before the generated text");
  run->add_flag("-v,--verbose", a->verbose,
                "show loading progress and a summary (also shown on a terminal), engine logs and timings on stderr");
  run->add_flag("--speculative{4}", a->speculative,
                "prompt-lookup speculative decoding of a greedy generation, drafting up to 4 tokens a step "
                "(--speculative=N: up to N); output unchanged, drafts only where the measured step costs say it pays")
      ->check(CLI::Range(1, 16));
  run->add_flag("--json", a->json, "print the accepted answer and every event as JSON lines (as `generate --json`)");
  run->callback([a, &exit_code] { exit_code = guarded("run", [&] { return run_local(*a); }); });
}

}  // namespace vks::cli
