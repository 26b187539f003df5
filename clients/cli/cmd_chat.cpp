// `vkstream chat`: an interactive conversation with vkstreamd. Each turn sends the whole history
// as a `chat` request; the daemon renders the model's chat template and stops at its end-of-turn
// tokens. Commands: /reset, /system TEXT, /help, /quit. Ctrl-C cancels the reply being streamed,
// not the session.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "clients/cli/event_wait.h"
#include "clients/cli/interrupt.h"
#include "engine/chat/model_chat_template.h"

namespace vks::cli {
namespace {

struct ChatArgs {
  ConnectionFlags conn;
  SamplingFlags sampling;
  bool verbose = false;
  std::string system;
  std::string template_file;
  std::string model;  // "" = the daemon's default
};

struct Reply {
  std::string text;
  bool failed = false;
  bool interrupted = false;
};

// Streams one reply to stdout; Ctrl-C cancels it (its finished event still arrives).
Reply stream_reply(vkstream::Client& client, const vkstream::GenerateOptions& options, bool verbose, int64_t timeout_ms) {
  InterruptGuard interrupt;
  const vkstream::Accepted accepted = client.submit(options);
  Reply reply;
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
    if (ev->kind == vkstream::EventKind::kProgress) {
      if (verbose) std::cerr << describe_progress(*ev) << '\n';
    } else if (ev->kind == vkstream::EventKind::kToken) {
      std::cout << ev->text << std::flush;
      reply.text += ev->text;
    } else if (ev->kind == vkstream::EventKind::kError) {
      reply.failed = true;
      print_error("reply failed: " + ev->error_code + ": " + ev->error_message);
    } else if (ev->kind == vkstream::EventKind::kFinished) {
      reply.interrupted = cancel_sent;
      if (verbose) {
        std::cerr << "\n[" << ev->finish_reason << ": prompt " << ev->usage.prompt_tokens << " (cached "
                  << ev->usage.cached_tokens << "), generated " << ev->usage.generated_tokens << "; TTFT "
                  << ev->timings.ttft_ms << " ms, total " << ev->timings.total_ms << " ms]";
      }
      return reply;
    }
  }
}

void print_help() {
  std::cerr << "commands: /reset (forget the conversation), /system TEXT (set the system prompt; empty removes it),\n"
               "          /help, /quit (or Ctrl-D). Ctrl-C stops the reply being written.\n";
}

int run_chat(ChatArgs& a) {
  vkstream::Client client = a.conn.connect();
  const bool tty = ::isatty(STDIN_FILENO) != 0;
  std::optional<std::string> chat_template;
  if (!a.template_file.empty()) chat_template = chat::read_template_file(a.template_file);
  if (tty) std::cerr << "vkstream chat: the model's chat template; /help lists commands\n";
  std::vector<vkstream::ChatMessage> history;
  std::string system = a.system;
  int exit_code = kExitOk;
  std::string line;
  for (;;) {
    if (tty) std::cout << "> " << std::flush;
    if (!std::getline(std::cin, line) || line == "/quit") break;
    if (line.empty()) continue;
    if (line == "/reset") {
      history.clear();
      std::cerr << "[conversation cleared]\n";
      continue;
    }
    if (line == "/system" || line.rfind("/system ", 0) == 0) {
      system = line.size() > 8 ? line.substr(8) : "";
      std::cerr << (system.empty() ? "[no system prompt]\n" : "[system prompt set]\n");
      continue;
    }
    if (line == "/help") {
      print_help();
      continue;
    }
    vkstream::GenerateOptions options;
    a.sampling.apply(options);
    if (!system.empty()) options.messages.push_back({"system", system});
    options.messages.insert(options.messages.end(), history.begin(), history.end());
    options.messages.push_back({"user", line});
    options.chat_template = chat_template;
    options.model = a.model;
    Reply reply;
    try {
      reply = stream_reply(client, options, a.verbose, a.conn.timeout_ms);
    } catch (const vkstream::ServerError& e) {
      // A refused turn (bad template, too long) leaves the conversation as it was.
      print_error("chat: " + e.code() + ": " + e.server_message());
      exit_code = kExitError;
      continue;
    }
    std::cout << '\n' << std::flush;
    if (reply.failed) {
      exit_code = kExitError;
      continue;
    }
    if (reply.interrupted) std::cerr << "[reply stopped]\n";
    history.push_back({"user", line});
    history.push_back({"assistant", reply.text});
  }
  return exit_code;
}

}  // namespace

void add_chat_command(CLI::App& root, int& exit_code) {
  auto c = std::make_shared<ChatArgs>();
  CLI::App* chat = root.add_subcommand("chat", "Interactive chat with vkstreamd (the model's chat template)");
  c->conn.add_to(*chat);
  c->sampling.add_to(*chat);
  chat->add_option("--model", c->model, "the served model to talk to (see `vkstream models --served`; default: the daemon's)");
  chat->add_option("--system", c->system, "system prompt (also /system TEXT during the chat)");
  chat->add_option("--chat-template", c->template_file, "Jinja template file to use instead of the model's");
  chat->add_flag("-v,--verbose", c->verbose, "print the progress of a long prompt and the usage/timings of each reply");
  chat->callback([c, &exit_code] { exit_code = guarded("chat", [&] { return run_chat(*c); }); });
}

}  // namespace vks::cli
