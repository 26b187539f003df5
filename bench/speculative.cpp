// Speculative decoding (prompt lookup, or a draft model) against plain decoding, in one process,
// alternating request by request (plain, speculative, plain, ...) on one engine, so load from
// neighbours falls on both alike.
//   vks_bench_speculative MODEL.gguf [--gen 96] [--rounds 3] [--draft 6] [--cpu] [--step-profile]
//                         [--draft-model DRAFT.gguf] [--draft-always] [--seed 7] [--replays 1] [--trace]
//   vks_bench_speculative --print-document
// Workloads of greedy requests (random token ids of any vocabulary, but for quoting):
//   repetitive: a 24-token phrase said four times, to be continued (a random-weight model does not
//               repeat the phrase; its greedy output falls into short cycles now and then, and
//               those are what prompt lookup finds);
//   quoting:    an English paragraph, then "Quote the text above.", the answer constrained by a
//               grammar to the paragraph's text. The grammar fixes the text, not the tokens: the
//               model picks, by its greedy argmax among the tokens that continue the quote, how to
//               spell it, so a draft from the prompt is right only where the model spells the text
//               as the prompt does. The prompt holds the paragraph as the model spelled it in
//               --replays earlier plain passes (0: in the tokenizer's tokens);
//   unquoted:   a 160-token "document", then its first 24 tokens again; a random-weight model does
//               not go on quoting, so drafts from the prompt fail: the cost of lookups that miss;
//   free:       (with --draft-model) a 32-token prompt continued freely, where only a draft model
//               can guess.
// A random-weight model neither repeats nor quotes its prompt, so the first two workloads measure
// little there. A model that memorized a text (vks-make-model --memorize FILE --untied: after any
// token of the text its greedy choice is the token the text follows it by, at the cost of a real
// model of its shape) makes them what they say: its text is then the phrase (said twice, not four
// times) and the document; --print-document writes the default document, to memorize, e.g.
//   vks_bench_speculative --print-document > doc.txt
//   vks-make-model -p tinyllama-1.1b -t q4_0 --vocab-from llama2-vocab.gguf --untied --memorize doc.txt -o memo.gguf
// Where the text follows a token by several (" the"), the model takes one of them wherever it meets
// that token: its answers jump within the text, and drafts miss there. Unquoted then measures
// little: the model goes on with its text whatever the prompt, and lookups find its own output.
// Prints per workload the median decode tokens/s (tokens after the first / time after the first)
// of each mode, the median of the per-pair ratios speculative / plain with its range, the median
// ratio of tokens per second of process CPU time (whole requests; on a shared machine other
// processes stretch wall time, not the work done), decode steps per request (plain: one per token)
// and the acceptance (accepted / drafted tokens). The runner is the one vkstreamd would pick
// (--cpu: the CPU backend). With --draft-model (same vocabulary, checked as vkstreamd checks it)
// the engine drafts with that model on a runner of its own. The cost model decides, as in
// vkstreamd, which drafts to make and verify (draft_length.h); --draft-always verifies every draft
// found. --step-profile first times the runner alone: one sequence's step of 1 + k tokens verifying
// k (what a verification step costs) against a 1-token decode step, for k = 0..8, so the ratios
// above can be read against the backend's cost of a wider step.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/process_cpu.h"
#include "engine/common/error.h"
#include "engine/common/thread_pool.h"
#include "engine/cpu/quant/qmatmul.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/model/llama_model.h"
#include "engine/sched/engine.h"
#include "engine/vulkan/runner/runner_factory.h"
#include "server/draft_model.h"
#include "tools/make_model/model_generator.h"

namespace {

struct Run {
  double decode_tps = 0;
  double cpu_tps = 0;  // generated tokens per second of process CPU time (the whole request)
  int32_t drafted = 0, accepted = 0;
  int32_t steps = 0;  // decode steps after the first token: each emits 1 + its accepted draft tokens
  std::vector<int32_t> ids;
};

struct Workload {
  const char* name;
  std::vector<int32_t> prompt;
  std::string grammar;  // GBNF the answer must follow; empty: free
};

Run generate(vks::Engine& engine, const Workload& w, int32_t gen, int32_t speculative) {
  vks::GenerateRequest r;
  r.prompt_ids = w.prompt;
  r.grammar = w.grammar;
  r.sampling.temperature = 0;
  r.stop.max_tokens = gen;
  r.stop.ignore_eos = w.grammar.empty();  // a grammar's answer may end where the grammar does
  r.logprobs = -1;
  r.speculative = speculative;
  const double cpu0 = vks::bench::process_cpu_seconds();
  const vks::SubmitResult s = engine.submit(r);
  if (!s.ok) throw vks::Error(s.code, s.message);
  Run run;
  while (true) {
    std::vector<vks::EngineEvent> ev;
    engine.poll_events(ev);
    for (const vks::EngineEvent& e : ev) {
      for (const vks::GeneratedToken& t : e.tokens) run.ids.push_back(t.id);
      if (e.type == vks::EventType::kError) throw vks::Error(e.error_code, e.error_message);
      if (e.type != vks::EventType::kFinished) continue;
      const double decode_ms = e.timings.total_ms - e.timings.ttft_ms;
      run.decode_tps = decode_ms > 0 ? (e.usage.generated_tokens - 1) / decode_ms * 1e3 : 0;
      run.cpu_tps = e.usage.generated_tokens / (vks::bench::process_cpu_seconds() - cpu0);
      run.drafted = e.timings.draft_tokens;
      run.accepted = e.timings.accepted_tokens;
      run.steps = e.usage.generated_tokens - 1 - run.accepted;
      return run;
    }
    if (ev.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// The quoting workload's document, unless the model memorized a text of its own.
constexpr const char* kDocument =
    "The old lighthouse stood at the end of the harbour wall for more than two hundred years. Its keepers "
    "lived in a small stone house at its foot, and every evening one of them climbed the ninety steps to "
    "light the lamp. In winter the storms came from the west, and the waves broke over the wall so high "
    "that the spray reached the gallery. The town grew up around the harbour: first the fishermen and their "
    "boats, then the net makers, the salt sellers and the inns. When the railway arrived, the fish went to "
    "the cities by night and the town became rich for a while. Later the big trawlers moved to deeper "
    "ports, the railway closed, and the lighthouse was run by a machine. Today the keepers house is a small "
    "museum, and in summer children climb the ninety steps to look at the lamp and the sea.";

// A grammar whose only sentence is `text`: the answer must quote it, in whatever tokens the model
// picks at each step (the greedy argmax among the tokens that continue the quote), so drafts from
// the prompt's tokens are right only where the model splits the text as the prompt does.
std::string quote_grammar(const std::string& text) { return "root ::= " + vks::grammar::gbnf_literal(text) + "\n"; }

double median(std::vector<double> v);

// Runner steps of one sequence at n_past ~ 200: 1 + k tokens, verifying k, median of `reps`.
void step_profile(vks::ModelRunner& runner, int32_t reps) {
  const int32_t bs = runner.block_size();
  const int32_t n_past = 200;
  vks::SeqChunk seq;
  for (int32_t b = 0; b * bs < n_past + 16; ++b) seq.block_table.push_back(b);
  vks::StepBatch batch;
  vks::StepResult out;
  std::mt19937 rng(3);
  auto fill = [&](int32_t n_past_now, int32_t n) {
    batch.tokens.clear();
    for (int32_t i = 0; i < n; ++i) batch.tokens.push_back(3 + static_cast<int32_t>(rng() % 1000));
    seq.token_offset = 0;
    seq.n_tokens = n;
    seq.n_past = n_past_now;
    seq.logits = vks::LogitsMode::kArgmax;
    seq.n_verify = n - 1;
    batch.seqs = {seq};
    batch.finalize(bs);
  };
  // The context the profiled steps attend to (its K/V), in prefill chunks.
  for (int32_t at = 0; at < n_past; at += 50) {
    fill(at, std::min(50, n_past - at));
    batch.seqs[0].n_verify = 0;
    runner.step(batch, out);
  }
  std::printf("runner step, one sequence at n_past %d, %d reps (median):\n", n_past, reps);
  std::printf("| tokens | step ms | per token ms | vs 1-token step | step CPU ms | CPU vs 1-token |\n");
  std::printf("|--------|---------|--------------|-----------------|-------------|----------------|\n");
  double one = 0, one_cpu = 0;
  for (int32_t n = 1; n <= 9; ++n) {
    std::vector<double> ms, cpu_ms;
    for (int32_t r = 0; r < reps; ++r) {
      fill(n_past, n);
      const double c0 = vks::bench::process_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      runner.step(batch, out);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      cpu_ms.push_back((vks::bench::process_cpu_seconds() - c0) * 1e3);
    }
    const double m = median(ms), c = median(cpu_ms);
    if (n == 1) one = m, one_cpu = c;
    std::printf("| %6d | %7.2f | %12.2f | %14.2fx | %11.2f | %13.2fx |\n", n, m, m / n, m / one, c, c / one_cpu);
  }
  std::printf("\n");
}

// The CPU's integer matmul alone (cpuq::qmatmul, 2 threads) on layer 0's FFN gate and the output
// matrix, n tokens at once: whether a wider step's cost is the kernel's.
void kernel_profile(const vks::LlamaModel& model, int32_t reps) {
  vks::ThreadPool pool(2);
  std::printf("cpuq::qmatmul alone, 2 threads, process CPU ms (median of %d):\n", reps);
  std::printf("| matrix | 1 token | 2 | 3 | 4 | 5 | 8 |\n|--------|---------|---|---|---|---|---|\n");
  for (const auto& [name, w] : {std::pair{"ffn_gate.0", &model.weights().layers[0].w_gate},
                                std::pair{"output", &model.weights().output}}) {
    std::printf("| %s |", name);
    for (size_t n : {1, 2, 3, 4, 5, 8}) {
      std::vector<float> x(n * w->cols, 0.01f), y(n * w->rows);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
      std::vector<double> ms;
      for (int32_t r = 0; r < reps; ++r) {
        const double c0 = vks::bench::process_cpu_seconds();
        vks::cpuq::qmatmul(*w, x.data(), n, y.data(), &pool);
        ms.push_back((vks::bench::process_cpu_seconds() - c0) * 1e3);
      }
      std::printf(" %.2f |", median(ms));
    }
    std::printf("\n");
  }
  std::printf("\n");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, draft_path;
  int32_t gen = 96, rounds = 3, draft = 6, replays = 1;
  uint32_t seed = 7;
  bool cpu = false, profile = false, always = false, trace = false;
  CLI::App app{"speculative decoding (prompt lookup or a draft model) vs plain decoding"};
  bool print_document = false;
  app.add_option("model", path);
  app.add_flag("--print-document", print_document, "write the quoting workload's default document and exit");
  app.add_option("--draft-model", draft_path, "draft with this model (same vocabulary) instead of prompt lookup");
  app.add_option("--gen", gen)->check(CLI::Range(2, 4096));
  app.add_option("--rounds", rounds)->check(CLI::Range(1, 100));
  app.add_option("--draft", draft)->check(CLI::Range(1, 16));
  app.add_option("--seed", seed, "the random token ids of the prompts");
  app.add_option("--replays", replays, "quoting: passes that respell the document in the model's own tokens")
      ->check(CLI::Range(0, 8));
  app.add_flag("--cpu", cpu);
  app.add_flag("--step-profile", profile);
  app.add_flag("--trace", trace, "print each workload's prompt and plain answer ids (first round)");
  app.add_flag("--draft-always", always, "verify every draft (the cost model off, as vkstreamd --draft-always)");
  CLI11_PARSE(app, argc, argv);
  if (print_document) {
    std::printf("%s", kDocument);
    return 0;
  }
  if (path.empty()) {
    std::fprintf(stderr, "a model file is required\n");
    return 2;
  }
  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    spdlog::set_level(spdlog::level::warn);
    auto model = vks::LlamaModel::load(path);
    auto tok = vks::Tokenizer::from_gguf(model->file());
    vks::RunnerOptions o;  // what a plain `vkstreamd --model FILE` asks for
    o.force_cpu = cpu;
    auto runner = vks::make_runner(*model, o);
    std::printf("model %s, device %s, gen %d, draft %d, rounds %d\n\n", path.c_str(), runner->device_name().c_str(), gen,
                draft, rounds);
    if (profile) {
      kernel_profile(*model, 9);
      step_profile(*runner, 7);
    }
    std::unique_ptr<vks::LlamaModel> draft_model;
    std::unique_ptr<vks::ModelRunner> draft_runner;
    vks::EngineConfig config;
    config.speculative_cost_model = !always;
    if (!draft_path.empty()) {
      draft_runner = vks::server::load_draft_runner(draft_path, o, config.max_seqs, path, *tok, draft_model);
      std::printf("draft model %s (%u layers, dim %u) on %s\n\n", draft_path.c_str(), draft_model->config().n_layers,
                  draft_model->config().dim, draft_runner->device_name().c_str());
    }
    std::printf("cost model %s\n\n", always ? "off (every draft verified)" : "on");
    vks::Engine engine(std::move(runner), *tok, config, std::move(draft_runner));

    const int32_t vocab = static_cast<int32_t>(model->config().vocab_size);
    std::mt19937 rng(seed);
    auto random_ids = [&](int n) {
      std::vector<int32_t> v;
      for (int i = 0; i < n; ++i) v.push_back(3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab - 3)));
      return v;
    };
    const int32_t bos = tok->bos() >= 0 ? tok->bos() : 1;
    // A model that memorized a text (vks-make-model --memorize) continues it from any of its
    // tokens: that text is the phrase and the document.
    const vks::gguf::Value* memorized = model->file().find(vks::tools::kMemorizedKey);
    const std::string document = memorized != nullptr ? memorized->s : kDocument;
    std::vector<int32_t> repetitive{bos};
    const std::vector<int32_t> phrase = memorized != nullptr ? tok->encode(document, false) : random_ids(24);
    for (int i = 0; i < (memorized != nullptr ? 2 : 4); ++i) repetitive.insert(repetitive.end(), phrase.begin(), phrase.end());
    std::vector<int32_t> unquoted{bos};
    const std::vector<int32_t> doc = random_ids(160);
    unquoted.insert(unquoted.end(), doc.begin(), doc.end());
    unquoted.insert(unquoted.end(), doc.begin(), doc.begin() + 24);
    // The quote's document as the model itself spells it: a first, plain pass quotes it from the
    // document in the tokenizer's own tokens (a random-weight model picks other tokens to spell the
    // same text); the prompt then holds the document in the tokens of that quote, and the answer
    // measured is the model's quote in that context, tokens picked again, drafts right only where
    // it splits the text as it did before.
    const std::vector<int32_t> question = tok->encode("\n\nQuote the text above.\n", false);
    std::vector<int32_t> quoting = tok->encode(document, true);
    quoting.insert(quoting.end(), question.begin(), question.end());
    for (int32_t pass = 0; pass < replays; ++pass) {
      const std::vector<int32_t> spelled = generate(engine, {"quoting", quoting, quote_grammar(document)}, gen + gen / 2, 0).ids;
      quoting.assign(1, bos);
      quoting.insert(quoting.end(), spelled.begin(), spelled.end());
      quoting.insert(quoting.end(), question.begin(), question.end());
    }
    std::vector<int32_t> free{bos};
    const std::vector<int32_t> start = random_ids(32);
    free.insert(free.end(), start.begin(), start.end());
    std::vector<Workload> workloads = {{"repetitive", repetitive, ""},
                                       {"quoting", quoting, quote_grammar(document)},
                                       {"unquoted", unquoted, ""}};
    if (!draft_path.empty()) workloads.push_back({"free", free, ""});
    const char* mode = draft_path.empty() ? "ngram" : "draft";
    std::printf("| %-10s | %11s | %11s | %10s | %12s | %9s | %11s | %12s |\n", "workload", "plain tok/s",
                (mode + std::string(" tok/s")).c_str(), (mode + std::string("/plain")).c_str(), "range", "CPU ratio",
                "steps", "accepted");
    std::printf("|------------|-------------|-------------|------------|--------------|-----------|-------------|--------------|\n");
    for (const Workload& w : workloads) {
      generate(engine, w, 8, 0);  // warm-up (and the prompt's blocks cached for both modes alike)
      std::vector<double> plain_tps, spec_tps, ratios, cpu_ratios, plain_steps, spec_steps;
      int64_t drafted = 0, accepted = 0;
      for (int32_t round = 0; round < rounds; ++round) {
        const Run p = generate(engine, w, gen, 0);
        const Run s = generate(engine, w, gen, draft);
        if (p.ids != s.ids) throw vks::Error(vks::ErrorCode::kInternal, "speculative output differs from plain output");
        if (trace && round == 0) {
          std::printf("%s prompt:", w.name);
          for (int32_t t : w.prompt) std::printf(" %d", t);
          std::printf("\n%s plain:", w.name);
          for (int32_t t : p.ids) std::printf(" %d", t);
          std::printf("\n");
        }
        plain_tps.push_back(p.decode_tps);
        spec_tps.push_back(s.decode_tps);
        ratios.push_back(s.decode_tps / p.decode_tps);
        cpu_ratios.push_back(s.cpu_tps / p.cpu_tps);
        plain_steps.push_back(p.steps);
        spec_steps.push_back(s.steps);
        drafted += s.drafted;
        accepted += s.accepted;
      }
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      std::printf("| %-10s | %11.2f | %11.2f | %9.2fx | %5.2f..%5.2f | %8.2fx | %4.0f -> %-4.0f | %5lld/%-6lld |\n", w.name,
                  median(plain_tps), median(spec_tps), median(ratios), *lo, *hi, median(cpu_ratios), median(plain_steps),
                  median(spec_steps), static_cast<long long>(accepted), static_cast<long long>(drafted));
    }
    // Engine ms per step beyond the runner's, over every step of every workload.
    const vks::EngineStats st = engine.stats();
    std::printf("\nengine overhead per step (step - runner, %lld steps): %.2f ms\n", static_cast<long long>(st.steps),
                (st.step_ms_total - st.runner_ms_total) / std::max<int64_t>(1, st.steps));
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", std::string(vks::error_code_name(e.code())).c_str(), e.what());
    return 1;
  }
  return 0;
}
