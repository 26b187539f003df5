// `vkstream generate`: stream a generation from the daemon (`vkstream chat` is in cmd_chat.cpp).
#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "clients/cli/event_wait.h"
#include "clients/cli/interrupt.h"
#include "clients/cli/logprobs_print.h"

namespace vks::cli {
namespace {

struct GenerateArgs {
  ConnectionFlags conn;
  SamplingFlags sampling;
  std::string prompt;
  std::string model;  // "" = the daemon's default
  bool json = false;
  bool verbose = false;
  std::string id;
  int32_t priority = 0;
  CLI::Option* priority_opt = nullptr;
  int64_t deadline_ms = 0;
  CLI::Option* deadline_opt = nullptr;
  bool detached = false;
  bool echo = false;
};

// Streams one request: prints text (or JSON lines), cancels on Ctrl-C. Returns the completion's
// finish reason ("" when the stream broke off).
struct StreamOutcome {
  std::string reason;
  std::string text;
  bool failed = false;
  bool interrupted = false;  // Ctrl-C cancelled it
  std::vector<LogprobRow> logprobs;  // when asked for (not with --json)
};

StreamOutcome stream_request(vkstream::Client& client, const vkstream::GenerateOptions& options, bool json,
                             bool verbose, int64_t timeout_ms) {
  InterruptGuard interrupt;
  const vkstream::Accepted accepted = client.submit(options);
  if (json) std::cout << accepted.raw.to_json() << '\n' << std::flush;
  if (verbose) std::cerr << "[request " << accepted.id << ", topic " << accepted.topic << "]\n";
  StreamOutcome out;
  bool cancel_sent = false;
  RequestEventWait waiter(client, accepted.id, std::chrono::milliseconds(timeout_ms));
  for (;;) {
    if (interrupt.interrupted() && !cancel_sent) {
      cancel_sent = true;
      try {
        client.cancel(accepted.id);
      } catch (const vkstream::ServerError&) {
        // Already finished: its finished event is on its way.
      }
    }
    std::optional<vkstream::Event> ev = waiter.next(kEventPoll);
    if (!ev) continue;
    if (json) {
      std::cout << ev->raw.to_json() << '\n' << std::flush;
    } else if (ev->kind == vkstream::EventKind::kProgress) {
      if (verbose) std::cerr << describe_progress(*ev) << '\n';
    } else if (ev->kind == vkstream::EventKind::kToken) {
      std::cout << ev->text << std::flush;
      out.text += ev->text;
      for (const vkstream::TokenLogprobs& lp : ev->logprobs) {
        LogprobRow row{lp.id, lp.logprob, {}};
        for (const vkstream::TopLogprob& t : lp.top) row.top.emplace_back(t.id, t.logprob);
        out.logprobs.push_back(std::move(row));
      }
    }
    if (ev->kind == vkstream::EventKind::kError) {
      out.failed = true;
      if (!json) print_error("request " + ev->id + " failed: " + ev->error_code + ": " + ev->error_message);
    }
    if (ev->kind == vkstream::EventKind::kFinished) {
      out.reason = ev->finish_reason;
      out.interrupted = cancel_sent;
      if (verbose) {
        std::cerr << "\n[" << ev->finish_reason << ": prompt " << ev->usage.prompt_tokens << " (cached "
                  << ev->usage.cached_tokens << "), generated " << ev->usage.generated_tokens << "; queue "
                  << ev->timings.queue_ms << " ms, TTFT " << ev->timings.ttft_ms << " ms, total "
                  << ev->timings.total_ms << " ms]\n";
      }
      return out;
    }
  }
}

int run_generate(GenerateArgs& a) {
  vkstream::GenerateOptions options;
  options.prompt = a.prompt == "-" ? read_all_stdin() : a.prompt;
  a.sampling.apply(options);
  options.id = a.id;
  options.model = a.model;
  if (*a.priority_opt) options.priority = a.priority;
  if (*a.deadline_opt) options.deadline_ms = a.deadline_ms;
  if (a.detached) options.detached = true;
  vkstream::Client client = a.conn.connect();
  if (a.echo && !a.json) std::cout << options.prompt << std::flush;
  const StreamOutcome out = stream_request(client, options, a.json, a.verbose, a.conn.timeout_ms);
  if (!a.json) std::cout << '\n' << std::flush;
  if (!a.json && !out.logprobs.empty()) {
    std::map<int32_t, std::string> pieces;  // detokenized once per distinct id
    // A token's text as it reads inside a text: decoding it alone would drop a SentencePiece
    // word's leading space (the rule for a sequence's first piece), so decode it twice in a row
    // and keep the second copy.
    const auto piece = [&](int32_t id) -> std::string {
      auto it = pieces.find(id);
      if (it == pieces.end()) {
        const std::string alone = client.detokenize({id});
        const std::string twice = client.detokenize({id, id});
        const bool prefixed = twice.size() >= alone.size() && twice.compare(0, alone.size(), alone) == 0;
        it = pieces.emplace(id, prefixed ? twice.substr(alone.size()) : alone).first;
      }
      return it->second;
    };
    std::cout << format_logprob_table(out.logprobs, piece) << std::flush;
  }
  if (out.interrupted) return kExitInterrupted;
  if (out.failed || out.reason == "error") return kExitError;
  if (out.reason == "cancelled" || out.reason == "deadline") {
    if (!a.json) print_error("request " + (a.id.empty() ? std::string("") : a.id + " ") + "ended early: " + out.reason);
    return kExitCutOff;
  }
  return kExitOk;
}

}  // namespace

void add_generate_commands(CLI::App& root, int& exit_code) {
  auto g = std::make_shared<GenerateArgs>();
  CLI::App* gen = root.add_subcommand("generate", "Stream a generation from vkstreamd");
  gen->add_option("prompt", g->prompt, "prompt text ('-' reads stdin)")->required();
  g->conn.add_to(*gen);
  g->sampling.add_to(*gen);
  gen->add_flag("--json", g->json, "print the accepted answer and every event as JSON lines");
  gen->add_flag("-v,--verbose", g->verbose, "print the request id, the progress of a long prompt and the usage/timings on stderr");
  gen->add_flag("--echo", g->echo, "print the prompt before the generated text");
  gen->add_option("--model", g->model, "the served model to use (see `vkstream models --served`; default: the daemon's)");
  gen->add_option("--id", g->id, "client-chosen request id (1..64 chars of [A-Za-z0-9._-])");
  g->priority_opt = gen->add_option("--priority", g->priority, "scheduling priority (higher first)");
  g->deadline_opt = gen->add_option("--deadline-ms", g->deadline_ms, "give up after this many ms (queue + generation)")
                        ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  gen->add_flag("--detached", g->detached, "keep running if this client disconnects");
  gen->callback([g, &exit_code] { exit_code = guarded("generate", [&] { return run_generate(*g); }); });

}

}  // namespace vks::cli
