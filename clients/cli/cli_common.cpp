#include "clients/cli/cli_common.h"

#include <iostream>
#include <cstdio>

#include "protocol/param_ranges.h"

namespace vks::cli {
namespace {

// The protocol's range for a generate parameter (protocol/param_ranges.h), so the CLI accepts
// exactly what the daemon accepts and says so in the same words.
CLI::Validator wire_range(const vks::proto::ParamRange& range) {
  return CLI::Validator(
      [range](std::string& in) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(in, &used);
          if (used != in.size()) return "not a number: " + in;
        } catch (const std::exception&) {
          return "not a number: " + in;
        }
        if (range.contains(v)) return {};
        return std::string(range.name) + ": " + range.violation(in);
      },
      range.describe(), std::string(range.name));
}

}  // namespace

void ConnectionFlags::add_to(CLI::App& app) {
  app.add_option("--socket", socket, "vkstreamd Unix socket (default " + vkstream::default_runtime_dir() + "/vkstream.sock)");
  app.add_option("--zmq", zmq, "use ZeroMQ at this ROUTER endpoint instead (e.g. ipc://.../router.zmq)");
  app.add_option("--pub", pub, "ZeroMQ XPUB endpoint for follow (default: from the daemon's hello)");
  app.add_option("--timeout", timeout_ms, "milliseconds to wait for an answer or for a request's next event (a daemon reading a long "
                 "prompt sends progress events); a request silent this long is still waited for while the daemon answers a stats check")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
}

vkstream::Endpoint ConnectionFlags::endpoint() const {
  vkstream::Endpoint e = vkstream::default_endpoint();
  if (!zmq.empty()) {
    e.unix_socket.clear();
    e.zmq_endpoint = zmq;
  } else if (!socket.empty()) {
    e.unix_socket = socket;
  }
  // The PUB endpoint comes from hello unless given: a non-default daemon announces its own.
  e.pub_endpoint = pub;
  return e;
}

vkstream::Client ConnectionFlags::connect() const {
  vkstream::Client c = vkstream::Client::connect(endpoint());
  c.set_timeout(std::chrono::milliseconds(timeout_ms));
  return c;
}

void SamplingFlags::add_to(CLI::App& app) {
  max_tokens_opt = app.add_option("-n,--max-tokens", max_tokens, "tokens to generate at most")
                       ->check(CLI::Range(1, 1 << 20));
  temperature_opt = app.add_option("-t,--temperature", temperature, "sampling temperature (0 = greedy)")
                        ->check(wire_range(vks::proto::param::kTemperature));
  top_k_opt = app.add_option("--top-k", top_k, "keep the K most likely tokens (0 = off)")->check(wire_range(vks::proto::param::kTopK));
  top_p_opt = app.add_option("--top-p", top_p, "nucleus sampling mass (1 = off)")->check(wire_range(vks::proto::param::kTopP));
  min_p_opt = app.add_option("--min-p", min_p, "drop tokens below min_p x the top probability (0 = off)")
                  ->check(wire_range(vks::proto::param::kMinP));
  repetition_opt = app.add_option("--repeat-penalty,--repetition-penalty", repetition_penalty,
                                  "repetition penalty (1 = off)")->check(wire_range(vks::proto::param::kRepetitionPenalty));
  presence_opt = app.add_option("--presence-penalty", presence_penalty, "presence penalty (0 = off)")
                     ->check(wire_range(vks::proto::param::kPresencePenalty));
  frequency_opt = app.add_option("--frequency-penalty", frequency_penalty, "frequency penalty (0 = off)")
                      ->check(wire_range(vks::proto::param::kFrequencyPenalty));
  last_n_opt = app.add_option("--penalty-last-n", penalty_last_n, "tokens the penalties look back (-1 = all)")
                   ->check(wire_range(vks::proto::param::kPenaltyLastN));
  seed_opt = app.add_option("-s,--seed", seed, "random seed (same seed and prompt: same output)");
  app.add_flag("-g,--greedy", greedy, "greedy decoding (same as --temperature 0)");
  app.add_option("--stop", stop, "stop string (repeatable; not included in the output)");
  app.add_option("--stop-token", stop_token_ids, "stop token id (repeatable)");
  app.add_option("--logit-bias", logit_bias, "ID=BIAS added to a token's logit (repeatable)");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating after the end-of-sequence token");
  min_tokens_opt = app.add_option("--min-tokens", min_tokens, "generate at least this many tokens")
                       ->check(CLI::Range(0, 1 << 20));
  logprobs_opt = app.add_option("--logprobs", logprobs, "return the top-N alternatives per token (0..20)")
                     ->check(CLI::Range(0, 20));
  app.add_flag("--no-bos", no_bos, "do not prepend the BOS token to the prompt");
  app.add_option("--grammar-file", grammar_file, "constrain the output to a GBNF grammar (llama.cpp notation)");
  app.add_option("--json-schema", json_schema_file, "constrain the output to JSON valid against this JSON Schema file")
      ->excludes("--grammar-file");
}

namespace {
std::string read_constraint_file(const std::string& path, const char* flag) {
  if (path.empty()) return {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw CLI::ValidationError(flag, "cannot read '" + path + "'");
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  if (text.empty()) throw CLI::ValidationError(flag, "'" + path + "' is empty");
  return text;
}
}  // namespace

std::string SamplingFlags::grammar_text() const { return read_constraint_file(grammar_file, "--grammar-file"); }
std::string SamplingFlags::json_schema_text() const { return read_constraint_file(json_schema_file, "--json-schema"); }

std::vector<std::pair<int32_t, double>> SamplingFlags::parsed_logit_bias() const {
  std::vector<std::pair<int32_t, double>> out;
  for (const std::string& entry : logit_bias) {
    const size_t eq = entry.find('=');
    try {
      if (eq == std::string::npos) throw std::invalid_argument("no '='");
      size_t used = 0;
      const int id = std::stoi(entry.substr(0, eq), &used);
      if (used != eq || id < 0) throw std::invalid_argument("bad id");
      const std::string bias_text = entry.substr(eq + 1);
      const double bias = std::stod(bias_text, &used);
      if (used != bias_text.size()) throw std::invalid_argument("bad bias");
      out.emplace_back(id, bias);
    } catch (const std::exception&) {
      throw CLI::ValidationError("--logit-bias", "expected ID=BIAS (e.g. 13=-100), got '" + entry + "'");
    }
  }
  return out;
}

void SamplingFlags::apply(vkstream::GenerateOptions& o) const {
  if (*max_tokens_opt) o.max_tokens = max_tokens;
  if (*temperature_opt) o.temperature = temperature;
  if (greedy) o.temperature = 0.0;
  if (*top_k_opt) o.top_k = top_k;
  if (*top_p_opt) o.top_p = top_p;
  if (*min_p_opt) o.min_p = min_p;
  if (*repetition_opt) o.repetition_penalty = repetition_penalty;
  if (*presence_opt) o.presence_penalty = presence_penalty;
  if (*frequency_opt) o.frequency_penalty = frequency_penalty;
  if (*last_n_opt) o.penalty_last_n = penalty_last_n;
  if (*seed_opt) o.seed = seed;
  o.stop = stop;
  o.stop_token_ids = stop_token_ids;
  o.logit_bias = parsed_logit_bias();
  if (ignore_eos) o.ignore_eos = true;
  if (*min_tokens_opt) o.min_tokens = min_tokens;
  if (*logprobs_opt) o.logprobs = logprobs;
  if (no_bos) o.add_bos = false;
  if (!grammar_file.empty()) o.grammar = grammar_text();
  if (!json_schema_file.empty()) o.json_schema = json_schema_text();
}

std::string read_all_stdin() {
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) text.append(buf, n);
  return text;
}

void print_error(const std::string& message) { std::cerr << "vkstream: " << message << std::endl; }

int guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const vkstream::ServerError& e) {
    std::string msg = std::string(command) + ": " + e.code() + ": " + e.server_message();
    if (!e.field().empty()) msg += " (field " + e.field() + ")";
    if (e.retry_after_ms() > 0) msg += " (retry in " + std::to_string(e.retry_after_ms()) + " ms)";
    print_error(msg);
    return kExitError;
  } catch (const vkstream::ClientError& e) {
    print_error(std::string(command) + ": " + e.what());
    return e.kind() == vkstream::ErrorKind::kNotRunning ? kExitNotRunning
           : e.kind() == vkstream::ErrorKind::kUsage    ? kExitUsage
                                                        : kExitError;
  } catch (const CLI::Error& e) {
    print_error(std::string(command) + ": " + e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    print_error(std::string(command) + ": " + e.what());
    return kExitError;
  }
}

}  // namespace vks::cli
