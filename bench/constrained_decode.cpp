// Decode throughput with and without a JSON-schema constraint, in one run on one engine: the same
// requests (greedy, fixed length, EOS ignored) unconstrained and constrained, repeated, and the
// ratio constrained / unconstrained. Also the cost of one mask computation for a fresh state.
//   constrained_decode MODEL.gguf [--seqs 4] [--tokens 128] [--rounds 3] [--temperature 0.7] [--cpu]
//                     [--schema FILE]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/grammar/compile.h"
#include "engine/grammar/token_constraint.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace {

using Clock = std::chrono::steady_clock;

// Objects in an array with no maxItems: never has to end, so every request decodes --tokens.
const char* kDefaultSchema = R"({"type":"array","items":{"type":"object","properties":{
  "name":{"type":"string","maxLength":24},"age":{"type":"integer","minimum":0,"maximum":150},
  "email":{"type":"string","pattern":"^[a-z]{1,12}@[a-z]{1,8}\\.(com|org)$"},
  "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":3},
  "score":{"type":"number"}},"required":["name","age","email"],"additionalProperties":false}})";

struct Result {
  double seconds = 0;
  int64_t tokens = 0;
};

Result run(vks::Engine& engine, int seqs, int tokens, const std::string& schema, uint64_t seed, float temperature) {
  std::vector<std::string> ids;
  const auto start = Clock::now();
  for (int i = 0; i < seqs; ++i) {
    vks::GenerateRequest r;
    r.prompt_text = "Once upon a time";
    r.sampling.temperature = temperature;
    r.sampling.seed = seed + static_cast<uint64_t>(i);
    r.stop.max_tokens = tokens;
    r.stop.ignore_eos = true;
    r.json_schema = schema;
    const vks::SubmitResult s = engine.submit(r);
    if (!s.ok) throw vks::Error(s.code, s.message);
    ids.push_back(s.id);
  }
  Result res;
  size_t finished = 0;
  while (finished < ids.size()) {
    std::vector<vks::EngineEvent> ev;
    engine.poll_events(ev);
    for (const auto& e : ev) {
      res.tokens += static_cast<int64_t>(e.tokens.size());
      if (e.type == vks::EventType::kError) std::fprintf(stderr, "error: %s\n", e.error_message.c_str());
      if (e.type == vks::EventType::kFinished) ++finished;
    }
    if (ev.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode tok/s with and without a JSON-schema constraint"};
  std::string path, schema_file;
  int seqs = 4, tokens = 128, rounds = 3, workers = 2;
  float temperature = 0.7f;
  bool cpu = false;
  app.add_option("model", path, "GGUF file")->required();
  app.add_option("--seqs,-s", seqs, "concurrent requests")->check(CLI::Range(1, 64));
  app.add_option("--tokens,-n", tokens, "tokens generated per request")->check(CLI::Range(1, 4096));
  app.add_option("--rounds,-r", rounds, "alternating rounds of each kind")->check(CLI::Range(1, 100));
  app.add_option("--workers", workers, "engine sampling threads")->check(CLI::Range(1, 64));
  app.add_option("--schema", schema_file, "JSON Schema file (default: an array of person objects)");
  app.add_flag("--cpu", cpu, "use the CPU runner");
  app.add_option("--temperature,-t", temperature, "sampling temperature (0 = greedy)")->check(CLI::Range(0.0, 10.0));
  CLI11_PARSE(app, argc, argv);
  try {
    std::string schema = kDefaultSchema;
    if (!schema_file.empty()) {
      std::ifstream f(schema_file);
      std::stringstream ss;
      ss << f.rdbuf();
      schema = ss.str();
    }
    const auto model = vks::LlamaModel::load(path);
    const auto tok = vks::Tokenizer::from_gguf(model->file());
    vks::RunnerOptions ro;
    ro.force_cpu = cpu;
    ro.force_vulkan = !cpu;  // the bench measures the backend it names, not the rule's pick
    ro.max_step_seqs = std::max(seqs, 1);
    ro.max_step_tokens = 512;
    vks::EngineConfig cfg;
    cfg.max_seqs = seqs;
    cfg.max_batched_tokens = 512;
    cfg.worker_threads = workers;
    vks::Engine engine(vks::make_runner(*model, ro), *tok, cfg);

    // One fresh-state mask (no cache) on this vocabulary: the worst case per step.
    {
      auto g = vks::grammar::compile_constraint({}, schema);
      auto index = std::make_shared<vks::grammar::TokenIndex>(*tok);
      const auto t0 = Clock::now();
      vks::grammar::TokenConstraint c(g, index);
      if (!c.accept_bytes("[{\"age\": 1, \"email\": \"a@b.com\", \"name\": \"")) throw vks::Error(vks::ErrorCode::kInternal, "schema prefix rejected");
      const auto t1 = Clock::now();
      (void)c.allowed();
      const auto t2 = Clock::now();
      std::printf("device %s, vocab %d\n", engine.device_name().c_str(), tok->vocab_size());
      std::printf("fresh mask inside a string: %.3f ms (state setup %.3f ms)\n",
                  std::chrono::duration<double, std::milli>(t2 - t1).count(),
                  std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    run(engine, seqs, 8, "", 1, temperature);  // warm-up (pipelines)
    Result plain, constrained;
    for (int r = 0; r < rounds; ++r) {
      const Result a = run(engine, seqs, tokens, "", 100 + static_cast<uint64_t>(r) * 10, temperature);
      const Result b = run(engine, seqs, tokens, schema, 100 + static_cast<uint64_t>(r) * 10, temperature);
      plain.seconds += a.seconds;
      plain.tokens += a.tokens;
      constrained.seconds += b.seconds;
      constrained.tokens += b.tokens;
    }
    const double tps_plain = static_cast<double>(plain.tokens) / plain.seconds;
    const double tps_constrained = static_cast<double>(constrained.tokens) / constrained.seconds;
    std::printf("%-14s %10s %10s %12s\n", "mode", "tokens", "seconds", "tok/s");
    std::printf("%-14s %10lld %10.3f %12.1f\n", "unconstrained", static_cast<long long>(plain.tokens), plain.seconds, tps_plain);
    std::printf("%-14s %10lld %10.3f %12.1f\n", "json_schema", static_cast<long long>(constrained.tokens),
                constrained.seconds, tps_constrained);
    std::printf("ratio constrained/unconstrained: %.3f\n", tps_constrained / tps_plain);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "constrained_decode: %s\n", e.what());
    return 1;
  }
  return 0;
}
