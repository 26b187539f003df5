#pragma once
// Pieces shared by the vkstream subcommands: exit codes, connection flags, sampling/stop flags.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vkstream/client.h"

namespace vks::cli {

// Exit codes (also listed in `vkstream --help`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;       // the request or the operation failed
inline constexpr int kExitUsage = 2;       // bad command line
inline constexpr int kExitNotRunning = 3;  // no daemon at the endpoint
// The request ended without its answer: cancelled by someone else, or past its deadline (a script
// must not take a cut-off text for a complete one).
inline constexpr int kExitCutOff = 4;
inline constexpr int kExitInterrupted = 130;  // Ctrl-C cancelled the generation (128 + SIGINT)

// How long a streaming command waits for its next event before it checks for Ctrl-C again.
inline constexpr std::chrono::milliseconds kEventPoll{100};

// --socket PATH / --zmq ENDPOINT / --pub ENDPOINT / --timeout MS.
struct ConnectionFlags {
  std::string socket;
  std::string zmq;
  std::string pub;
  int64_t timeout_ms = 30000;

  void add_to(CLI::App& app);
  vkstream::Endpoint endpoint() const;  // defaults per TEAM.md when no flag is given
  vkstream::Client connect() const;     // throws vkstream::ClientError
};

// Every sampling and stop parameter; only the flags given on the command line are sent.
struct SamplingFlags {
  int32_t max_tokens = 0;
  double temperature = 1.0;
  int32_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  int32_t penalty_last_n = 64;
  uint64_t seed = 0;
  bool greedy = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> logit_bias;  // "ID=BIAS"
  bool ignore_eos = false;
  int32_t min_tokens = 0;
  int32_t logprobs = 0;
  bool no_bos = false;
  std::string grammar_file;      // --grammar-file: GBNF text sent as `grammar`
  std::string json_schema_file;  // --json-schema: JSON Schema file sent as `json_schema`

  // Set once the command line was parsed: which flags were given.
  CLI::Option* max_tokens_opt = nullptr;
  CLI::Option* temperature_opt = nullptr;
  CLI::Option* top_k_opt = nullptr;
  CLI::Option* top_p_opt = nullptr;
  CLI::Option* min_p_opt = nullptr;
  CLI::Option* repetition_opt = nullptr;
  CLI::Option* presence_opt = nullptr;
  CLI::Option* frequency_opt = nullptr;
  CLI::Option* last_n_opt = nullptr;
  CLI::Option* seed_opt = nullptr;
  CLI::Option* min_tokens_opt = nullptr;
  CLI::Option* logprobs_opt = nullptr;

  void add_to(CLI::App& app);
  // Parsed logit_bias; throws CLI::ValidationError for a malformed entry.
  std::vector<std::pair<int32_t, double>> parsed_logit_bias() const;
  // Copies the given flags into options (greedy → temperature 0). Throws CLI::ValidationError
  // when a --grammar-file / --json-schema file cannot be read.
  void apply(vkstream::GenerateOptions& options) const;
  // Contents of --grammar-file / --json-schema ("" when not given).
  std::string grammar_text() const;
  std::string json_schema_text() const;
};

// Reads all of stdin (for a prompt given as "-").
std::string read_all_stdin();

// One line on stderr: "vkstream: <message>".
void print_error(const std::string& message);

// Runs `body`, turning every error into one line on stderr and an exit code.
int guarded(const char* command, const std::function<int()>& body);

}  // namespace vks::cli
