#pragma once
// Each file registers its subcommands on the root app; the callback stores the exit code.
#include <CLI/CLI.hpp>

namespace vks::cli {

void add_run_command(CLI::App& root, int& exit_code);          // cmd_run.cpp (in-process engine)
void add_generate_commands(CLI::App& root, int& exit_code);    // cmd_generate.cpp: generate
void add_chat_command(CLI::App& root, int& exit_code);         // cmd_chat.cpp: interactive chat
void add_info_commands(CLI::App& root, int& exit_code);        // cmd_info.cpp: hello, model, tokenize,
                                                               // detokenize, cancel, status, stats
void add_follow_command(CLI::App& root, int& exit_code);       // cmd_follow.cpp
void add_devices_command(CLI::App& root, int& exit_code);      // cmd_devices.cpp
void add_bench_command(CLI::App& root, int& exit_code);        // cmd_bench.cpp
void add_template_command(CLI::App& root, int& exit_code);     // cmd_template.cpp (in-process)
void add_pull_command(CLI::App& root, int& exit_code);         // cmd_pull.cpp
void add_models_command(CLI::App& root, int& exit_code);       // cmd_models.cpp
void add_embed_command(CLI::App& root, int& exit_code);        // cmd_embed.cpp

}  // namespace vks::cli
