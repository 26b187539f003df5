// vkstream: the command-line client of vkstreamd, plus `run` (in-process) and `devices`.
#include <CLI/CLI.hpp>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"vkstream: streaming LLM inference on Vulkan (client of vkstreamd)", "vkstream"};
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 the operation failed, 2 bad command line, 3 vkstreamd is not running,\n"
      "4 the request was cancelled elsewhere or hit its deadline (generate: the text is cut off),\n"
      "130 interrupted (the first Ctrl-C cancels the generation, a second one exits at once).\n"
      "Daemon endpoints default to " +
      vkstream::default_runtime_dir() +
      "/{vkstream.sock,router.zmq,pub.zmq}\n"
      "($XDG_RUNTIME_DIR/vkstream, or /run/vkstream without XDG_RUNTIME_DIR).");
  int exit_code = vks::cli::kExitOk;
  vks::cli::add_run_command(app, exit_code);
  vks::cli::add_generate_commands(app, exit_code);
  vks::cli::add_chat_command(app, exit_code);
  vks::cli::add_info_commands(app, exit_code);
  vks::cli::add_follow_command(app, exit_code);
  vks::cli::add_devices_command(app, exit_code);
  vks::cli::add_bench_command(app, exit_code);
  vks::cli::add_template_command(app, exit_code);
  vks::cli::add_pull_command(app, exit_code);
  vks::cli::add_models_command(app, exit_code);
  vks::cli::add_embed_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    vks::cli::print_error(e.what() + std::string(" (see vkstream --help)"));
    return vks::cli::kExitUsage;
  }
  return exit_code;
}
