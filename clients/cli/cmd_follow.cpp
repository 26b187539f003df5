// `vkstream follow ID`: subscribe to a running (or recently finished) request's stream from another
// terminal. Every event from the first, exactly once, in order.
#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"

namespace vks::cli {
namespace {

struct FollowArgs {
  ConnectionFlags conn;
  std::string id;
  bool json = false;
};

int run_follow(FollowArgs& a) {
  vkstream::Client control = a.conn.connect();
  vkstream::Subscriber sub = vkstream::follow(control, a.id);
  bool failed = false;
  while (std::optional<vkstream::Event> ev = sub.next(std::chrono::milliseconds(a.conn.timeout_ms))) {
    if (a.json) {
      std::cout << ev->raw.to_json() << '\n' << std::flush;
    } else if (ev->kind == vkstream::EventKind::kToken) {
      std::cout << ev->text << std::flush;
    } else if (ev->kind == vkstream::EventKind::kError) {
      failed = true;
      print_error("request " + a.id + " failed: " + ev->error_code + ": " + ev->error_message);
    } else if (ev->kind == vkstream::EventKind::kFinished && ev->finish_reason == "error") {
      failed = true;
    }
  }
  if (!a.json) std::cout << '\n' << std::flush;
  return failed ? kExitError : kExitOk;
}

}  // namespace

void add_follow_command(CLI::App& root, int& exit_code) {
  auto a = std::make_shared<FollowArgs>();
  CLI::App* f = root.add_subcommand("follow", "Follow a request's stream (its PUB topic) from another terminal");
  f->add_option("id", a->id, "request id")->required();
  a->conn.add_to(*f);
  f->add_flag("--json", a->json, "print every event as a JSON line");
  f->callback([a, &exit_code] { exit_code = guarded("follow", [&] { return run_follow(*a); }); });
}

}  // namespace vks::cli
