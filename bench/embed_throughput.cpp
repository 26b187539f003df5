// Embedding throughput in one run on one engine: texts/s of embed requests alone, then the same
// requests while --decoders greedy generations keep decoding beside them, and the decoders' tok/s
// alone and with the embeddings; prints both ratios.
//   embed_throughput MODEL.gguf [--texts 256] [--per-request 16] [--decoders 4] [--cpu]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace {

using Clock = std::chrono::steady_clock;

const char* const kSentences[] = {
    "Once upon a time there was a little girl named Lily.",
    "The dog ran to the park and played with a red ball.",
    "Tom and Sue went to the beach to build a big sand castle with their mom.",
    "One day, a bird found a shiny stone under a tree.",
    "The sun was warm and the sky was blue, so everyone was happy.",
};

struct Counts {
  double seconds = 0;
  int64_t texts = 0;          // embedded
  int64_t decoded = 0;        // generated tokens
};

// Runs until `texts` have been embedded (0: none) or, with no embeddings, for `decode_seconds`;
// `decoders` generations are kept running the whole time (resubmitted when one finishes).
Counts run(vks::Engine& engine, int texts, int per_request, int decoders, double decode_seconds) {
  Counts c;
  std::set<std::string> embeds, gens;
  auto start_decoder = [&] {
    vks::GenerateRequest g;
    g.prompt_text = "Once upon a time";
    g.sampling.temperature = 0;
    g.stop.max_tokens = 400;
    g.stop.ignore_eos = true;
    const vks::SubmitResult s = engine.submit(g);
    if (!s.ok) throw vks::Error(s.code, s.message);
    gens.insert(s.id);
  };
  for (int i = 0; i < decoders; ++i) start_decoder();
  const auto start = Clock::now();
  for (int sent = 0; sent < texts; sent += per_request) {
    vks::EmbedRequest r;
    for (int k = 0; k < per_request && sent + k < texts; ++k) r.texts.push_back(kSentences[(sent + k) % 5]);
    const vks::SubmitResult s = engine.submit_embed(r);
    if (!s.ok) throw vks::Error(s.code, s.message);
    embeds.insert(s.id);
  }
  bool stop_decoders = false;
  while (!embeds.empty() || (texts == 0 && !stop_decoders)) {
    std::vector<vks::EngineEvent> ev;
    engine.poll_events(ev);
    for (const auto& e : ev) {
      if (gens.count(e.request_id)) c.decoded += static_cast<int64_t>(e.tokens.size());
      if (e.type == vks::EventType::kError) std::fprintf(stderr, "error: %s\n", e.error_message.c_str());
      if (e.type != vks::EventType::kFinished) continue;
      if (embeds.erase(e.request_id)) c.texts += static_cast<int64_t>(e.embeddings.size());
      if (gens.erase(e.request_id)) start_decoder();
    }
    if (texts == 0) stop_decoders = std::chrono::duration<double>(Clock::now() - start).count() >= decode_seconds;
    if (ev.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  c.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const std::string& id : gens) engine.cancel(id);
  while (!gens.empty()) {  // drain the cancelled decoders
    std::vector<vks::EngineEvent> ev;
    engine.poll_events(ev);
    for (const auto& e : ev) {
      if (e.type == vks::EventType::kFinished) gens.erase(e.request_id);
    }
    if (ev.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Embedding throughput alone and batched with decoding"};
  std::string path;
  int texts = 256, per_request = 16, decoders = 4;
  bool cpu = false;
  app.add_option("model", path, "GGUF file")->required();
  app.add_option("--texts", texts, "texts embedded per measurement")->check(CLI::Range(1, 1 << 20));
  app.add_option("--per-request", per_request, "texts per embed request")->check(CLI::Range(1, 2048));
  app.add_option("--decoders", decoders, "generations decoding beside the embeddings")->check(CLI::Range(1, 32));
  app.add_flag("--cpu", cpu, "use the CPU runner");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto model = vks::LlamaModel::load(path);
    const auto tok = vks::Tokenizer::from_gguf(model->file());
    vks::RunnerOptions ro;
    ro.force_cpu = cpu;
    ro.force_vulkan = !cpu;  // the bench measures the backend it names, not the rule's pick
    ro.max_step_tokens = 512;
    ro.max_step_seqs = 64;
    vks::EngineConfig cfg;
    cfg.max_batched_tokens = 512;
    cfg.max_seqs = 64;
    cfg.max_queued = 1 << 20;
    vks::Engine engine(vks::make_runner(*model, ro), *tok, cfg);
    std::printf("device %s, %d texts, %d per request, %d decoders\n", engine.device_name().c_str(), texts, per_request,
                decoders);
    run(engine, per_request, per_request, 1, 0);  // warm-up (pipelines)

    const Counts embed_alone = run(engine, texts, per_request, 0, 0);
    const Counts both = run(engine, texts, per_request, decoders, 0);
    const Counts decode_alone = run(engine, 0, per_request, decoders, both.seconds);
    const double e_alone = static_cast<double>(embed_alone.texts) / embed_alone.seconds;
    const double e_both = static_cast<double>(both.texts) / both.seconds;
    const double d_alone = static_cast<double>(decode_alone.decoded) / decode_alone.seconds;
    const double d_both = static_cast<double>(both.decoded) / both.seconds;
    std::printf("%-28s %10s %12s %12s\n", "run", "seconds", "texts/s", "decode tok/s");
    std::printf("%-28s %10.3f %12.1f %12s\n", "embed alone", embed_alone.seconds, e_alone, "-");
    std::printf("%-28s %10.3f %12s %12.1f\n", "decode alone", decode_alone.seconds, "-", d_alone);
    std::printf("%-28s %10.3f %12.1f %12.1f\n", "embed + decode", both.seconds, e_both, d_both);
    std::printf("ratio embed texts/s batched/alone: %.3f\n", e_both / e_alone);
    std::printf("ratio decode tok/s with embeddings/alone: %.3f\n", d_both / d_alone);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_throughput: %s\n", e.what());
    return 1;
  }
  return 0;
}
