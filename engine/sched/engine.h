#pragma once
// The engine behind the daemon: submit / cancel from any thread; one scheduler thread runs steps on
// a ModelRunner; events come back through a queue that the server drains (poll_events) after the
// notifier fires (the server binds it to uv_async_send, which coalesces: drain everything).
// Requests are known by id only.
//
// Per request the events are: kQueued (queue position), kScheduled (again after each preemption),
// kPreempted, kProgress (while a long prompt is read: EngineConfig::progress_interval_ms), kFirstToken then kToken (one generated id each, with its complete UTF-8 text delta and
// logprobs), kError (code + message, only on failure), and always kFinished last (reason, usage,
// timings), for every request whose submit returned ok: also when cancelled before being scheduled
// and when the engine is destroyed (everything live ends as cancelled before ~Engine returns).
// Text held back for a possible stop string is emitted (with no ids) before a cancel/deadline finish.
// Logprobs: log-softmax of the logits after logit_bias, penalties and min_tokens suppression, before
// temperature and top-k/top-p/min-p (see engine/sched/sampler.h). Scheduling, aging bound and
// preemption: engine/sched/scheduler.h; prefix cache: engine/sched/block_manager.h.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/model_runner.h"
#include "engine/model/pooling.h"
#include "engine/tokenizer/tokenizer.h"

namespace vks {

namespace grammar {
class GrammarTable;
}

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off (llama.cpp semantics)
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;      // window for the penalties (-1 = whole context)
  std::vector<std::pair<TokenId, float>> logit_bias;
  std::optional<uint64_t> seed;     // none = random
};

struct StopParams {
  int32_t max_tokens = 0;  // 0 = not set: generate until the context (or KV cache) is full, finish `length`
  int32_t min_tokens = 0;
  bool ignore_eos = false;
  std::vector<TokenId> stop_token_ids;
  std::vector<std::string> stop_strings;  // matched across token boundaries, never emitted
};

struct GenerateRequest {
  std::string id;                     // empty: the engine assigns one
  std::string prompt_text;            // used when prompt_ids is empty
  std::vector<TokenId> prompt_ids;
  std::optional<bool> add_bos;        // only for prompt_text; unset: the model's add_bos_token
  bool prompt_ids_from_text = false;  // prompt_ids were tokenized from prompt_text by the caller
                                      // (off the socket loop): errors still name prompt_text
  // Constrained output (engine/grammar): a GBNF grammar (start rule `root`) or a JSON Schema as
  // JSON text; at most one. Compiled by submit(), which rejects a bad one (kInvalidArgument, the
  // message gives the position). Every generated token then keeps the text a prefix of a sentence
  // of the grammar, and EOS is allowed only where the grammar can end.
  std::string grammar;
  std::string json_schema;
  // Set by Engine::prepare_constraint (e.g. on a worker thread, so a big grammar never compiles on
  // the daemon's socket loop); submit() compiles the text only when this is null.
  std::shared_ptr<grammar::GrammarTable> compiled_constraint;
  SamplingParams sampling;
  StopParams stop;
  int32_t logprobs = 0;               // top-N alternatives per token, 0..20; -1 = none at all
  int32_t priority = 0;               // higher first, -1000..1000
  std::optional<std::chrono::steady_clock::time_point> deadline;  // covers queue + generation
  // Prompt-lookup speculative decoding (engine/sched/ngram_drafter.h): the most tokens drafted per
  // step, 0..16; 0 = off; -1 = on with EngineConfig::speculative_draft (4 when that is 0); unset =
  // EngineConfig::speculative_draft. Requests speculate once past min_tokens, greedy, sampled and
  // constrained alike, and their output is exactly plain decoding's (row_draws.h: a seeded
  // sampled request draws the tokens it draws without speculation).
  std::optional<int32_t> speculative;
};

// Embeddings (engine/sched/engine_embed.cpp): one vector per input, pooled from the hidden states
// after the final RMSNorm (engine/model/pooling.h). Each input is prefilled through the scheduler
// like a prompt (chunked, batched with generation; no prefix-cache reuse, its KV blocks freed as
// soon as it is pooled). Events: kError (on failure) and kFinished, which carries `embeddings`.
struct EmbedRequest {
  std::string id;                               // empty: the engine assigns one
  std::vector<std::string> texts;               // used when token_inputs is empty
  std::vector<std::vector<TokenId>> token_inputs;
  std::optional<bool> add_bos;                  // only for texts; unset: the model's add_bos_token
  bool inputs_from_text = false;                // token_inputs were tokenized from texts by the caller:
                                                // errors still name `input`
  std::optional<Pooling> pooling;               // none: the model's pooling_type (mean for generative models)
  bool normalize = true;                        // L2-normalize each vector
  int32_t priority = 0;                         // as GenerateRequest::priority
  std::optional<std::chrono::steady_clock::time_point> deadline;
};
inline constexpr size_t kMaxEmbedInputs = 2048;  // per request (OpenAI's limit)

enum class EventType { kQueued, kScheduled, kFirstToken, kToken, kPreempted, kFinished, kError, kProgress };
enum class FinishReason { kStop, kLength, kCancelled, kDeadline, kError };
std::string_view event_type_name(EventType t);
std::string_view finish_reason_name(FinishReason r);

struct TokenLogprob {
  TokenId id = 0;
  float logprob = 0;
};
struct GeneratedToken {
  TokenId id = 0;
  float logprob = 0;                  // of the chosen token (0 when logprobs < 0)
  std::vector<TokenLogprob> top;      // top-N alternatives
};
struct Usage {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;          // prompt tokens served from the prefix cache
  int32_t generated_tokens = 0;
};
struct Timings {
  double queue_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  int32_t draft_tokens = 0;     // speculative decoding: tokens drafted and verified
  int32_t accepted_tokens = 0;  // of them, equal to the target's (each saved one step)
};

struct EngineEvent {
  std::string request_id;
  EventType type = EventType::kToken;
  int32_t queue_position = -1;                 // kQueued
  std::vector<GeneratedToken> tokens;          // kFirstToken / kToken
  std::string text;                            // kFirstToken / kToken: complete UTF-8 text delta
  FinishReason reason = FinishReason::kStop;   // kFinished
  Usage usage;                                 // kFinished
  Timings timings;                             // kFinished
  ErrorCode error_code = ErrorCode::kInternal; // kError (a kFinished with reason kError follows)
  std::string error_message;
  // kFinished (reason kStop) of an embed request: one vector [dim] per input, in input order.
  std::vector<std::vector<float>> embeddings;
  // kProgress: the prompt tokens in the KV cache so far (prefix-cache hits included); usage
  // carries the prompt's length (prompt_tokens) and its part served by the prefix cache.
  int32_t prompt_tokens_done = 0;
};

enum class SchedulingPolicy { kFcfs, kPriority };

struct EngineConfig {
  int32_t max_batched_tokens = 256;   // token budget per step (≤ runner max_step_tokens)
  int32_t max_seqs = 16;              // sequences per step (≤ runner max_step_seqs)
  int32_t max_queued = 256;           // waiting requests before submit answers kOverloaded
  int32_t max_prompt_tokens = 0;      // 0 = context length
  int32_t max_new_tokens = 0;         // upper bound for max_tokens; 0 = context length
  bool prefix_caching = true;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Threads sampling a step's sequences, the engine thread included; 0: one per core, at most 16.
  // Why not 1: a temperature draw over a 32,000-token vocabulary takes 0.1-0.3 ms, and on a GPU
  // 16 of them in a row made the engine's step 1.35-1.6x the runner's (TinyLlama Q4_0 on an H100).
  int32_t worker_threads = 0;
  // Additions (E):
  int32_t kv_blocks_limit = 0;        // use at most this many of the runner's KV blocks; 0 = all
  double aging_ms = 1000.0;           // kPriority: a waiting request gains one level per aging_ms
  // Prompt-lookup speculative decoding for requests that leave `speculative` unset: the most
  // tokens drafted per step (0 = off, at most 16). Verification rows share the runner's output
  // rows: a step verifies at most runner max_step_seqs - max_seqs draft tokens in all.
  int32_t speculative_draft = 0;
  // Draft lengths follow the measured cost of wider steps and each request's acceptance, and are 0
  // where speculating would not pay (draft_length.h). false: every draft found is verified in
  // full, whatever it costs (tests that must exercise verification).
  bool speculative_cost_model = true;
  // A request whose prompt takes several steps to read gets a kProgress event after a prefill
  // step at most this often (and a last one when its prompt is complete), so that a client
  // timing silence can tell a long prefill from a hung server. 0: after every prefill step;
  // negative: never. A prompt read in one step gets none: its first token follows at once.
  double progress_interval_ms = 1000.0;
};

struct SubmitResult {
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string message;                // on failure: names the field or limit
  int32_t retry_after_ms = 0;         // with kOverloaded
  std::string id;
  int32_t queue_position = 0;
  int32_t prompt_tokens = 0;
};

// One paged KV pool (engine/model/kv_pools.h): "full" keeps whole sequences (every attention layer's
// K/V in a one-pool model), "window" only what the window layers still see.
struct KvPoolStats {
  std::string kind;
  int32_t layers = 0;            // attention layers whose K/V it holds
  int32_t window = 0;            // the window it keeps (0: whole sequences)
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;       // held by sequences
  int32_t blocks_cached = 0;     // holding a registered prefix (evictable when free)
  int64_t bytes_per_block = 0;   // one block of every layer it holds, K and V
  int32_t blocks_used_peak = 0;  // the most blocks_used any engine turn has ended with
};

struct EngineStats {
  int32_t waiting = 0;
  int32_t running = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  int64_t kv_bytes_per_token = 0;     // one token's keys and values, every layer
  int32_t cpu_expert_layers = 0;      // expert layers run on the CPU beside the GPU (ModelRunner::cpu_expert_layers)
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_query_tokens = 0;    // hit rate = hit / query
  int64_t requests_finished = 0;
  int64_t tokens_generated = 0;
  int64_t prompt_tokens_processed = 0;
  double decode_tokens_per_s = 0;     // recent window
  std::vector<double> ttft_ms_samples;  // recent, for histograms
  std::vector<double> itl_ms_samples;   // recent inter-token latencies
  // Additions (E):
  int64_t preemptions = 0;
  int32_t kv_blocks_cached = 0;       // blocks holding a registered prefix (evictable when free)
  std::vector<KvPoolStats> kv_pools;  // per layer kind: the full pool, then the window pool if any
  int64_t requests_rejected = 0;      // submits answered with an error
  // Engine overhead: over the `steps` loop turns that ran a model step, their total wall time
  // (scheduling, batch building, the runner, sampling, stop checks, events) and the part inside
  // ModelRunner::step. step / runner is the engine's cost on top of the runner's.
  int64_t steps = 0;
  double step_ms_total = 0;
  double runner_ms_total = 0;
  int64_t draft_tokens = 0;           // speculative decoding: drafted and verified
  int64_t accepted_tokens = 0;        // acceptance rate = accepted / draft
};

class Engine {
 public:
  // The tokenizer must outlive the engine. Starts the scheduler thread. draft_runner: a draft model
  // of the same vocabulary (speculative decoding drafts with it instead of prompt lookup).
  Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, EngineConfig config,
         std::unique_ptr<ModelRunner> draft_runner = nullptr);
  ~Engine();  // cancels everything and joins the thread; never throws
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Called on the engine thread after events were queued. Set before the first submit.
  void set_event_notifier(std::function<void()> notify);

  SubmitResult submit(GenerateRequest request);  // any thread; validates, tokenizes, enqueues
  // Any thread: compiles request.grammar / request.json_schema into request.compiled_constraint.
  // False with `error` set (starts with the field name, gives the position) when it does not compile.
  bool prepare_constraint(GenerateRequest& request, std::string& error);
  // Any thread: validates, tokenizes texts, enqueues every input. An input longer than the context
  // (or max_prompt_tokens) is rejected with kInvalidArgument naming it (`input.i` / `tokens.i`),
  // and prompt_tokens is then that input's length; on success prompt_tokens is the total.
  SubmitResult submit_embed(EmbedRequest request);
  bool cancel(const std::string& id);            // any thread; false if unknown or finished
  size_t poll_events(std::vector<EngineEvent>& out);  // any thread; appends and drains
  EngineStats stats() const;
  const LlamaConfig& model_config() const;
  std::string device_name() const;
  // The runner's KV pools: bytes one token takes in every layer, and their element types.
  uint64_t kv_bytes_per_token() const;
  std::string kv_type() const;
  // Tokens the KV cache can hold (blocks in use x block size): what one sequence can ever reach.
  int32_t kv_capacity_tokens() const;
  // The KV pools' memory: the full pool's blocks, and the window pool's (engine/model/kv_pools.h).
  uint64_t kv_pool_bytes() const;
  // The recurrent state slots' memory (live and checkpoint slots, engine/model/model_runner.h): a
  // hybrid model's per-sequence states, kept beside the KV pools. 0 for a model without them.
  uint64_t recurrent_state_bytes() const;
  // The longest prompt accepted: config.max_prompt_tokens, the context and the KV cache, the least.
  int32_t max_prompt_tokens() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vks
