#include "tools/make_model/model_generator.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/architecture.h"
#include "tools/make_model/synthetic_vocab.h"

namespace vks::tools {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Approximately standard-normal values, cheaply: the sum of four 16-bit uniforms (Irwin-Hall),
// centred and scaled to unit variance. Fast enough for a billion weights; the tails stop at ±3.5σ.
class NormalRng {
 public:
  explicit NormalRng(uint64_t seed) : state_(seed) {}
  float next() {
    const uint64_t r = splitmix64(state_);
    const uint32_t sum = static_cast<uint32_t>(r & 0xFFFF) + static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                         static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
    constexpr float kMean = 4 * 32767.5f;
    constexpr float kInvStd = 1.0f / 37837.23f;  // 65536 * sqrt(4 / 12)
    return (static_cast<float>(sum) - kMean) * kInvStd;
  }

 private:
  uint64_t state_;
};

enum class Init { kMatrix, kNorm, kBias };

struct TensorPlan {
  std::string name;
  GgmlType type;
  uint64_t rows;       // of all `stack` matrices together
  uint64_t cols;
  Init init;
  uint64_t stack = 1;  // a 3-D tensor of `stack` matrices (experts): ggml dims [cols, rows / stack, stack]
  // Values ~ N(mean, std_dev^2) instead of the init's default where std_dev >= 0.
  float mean = 0.0f;
  float std_dev = -1.0f;
};

// Tied Gemma models (as the fixtures, /work/shared/models/README.md): the input embedding is
// multiplied by sqrt(dim), and logits are the final state times the same rows. With unit-scale
// embeddings the residual stream stays dominated by the input token and a random model echoes it;
// small embeddings (std 0.25 after the sqrt(dim) scale), post-norms ~2 (each sublayer's output
// outweighs the embedding) and output_norm ~16 (logits std ~4 = 16 x 0.25) keep it sane at any dim.
constexpr float kGemmaEmbedStd = 0.25f;
constexpr float kGemmaPostNorm = 2.0f;
constexpr float kGemmaOutputNorm = 16.0f;

// A Gated DeltaNet layer's tensors (qwen35): the q/k/v projection, z, beta and alpha, the F32 conv
// taps, dt bias, decay rate a = -exp(A_log) (negative: the state decays), the head norm, ssm_out.
template <class Matrix, class Vec>
void add_deltanet(const ModelSpec& s, const std::string& b, Matrix& matrix, Vec& vec, std::vector<TensorPlan>& p) {
  const ModelSpec::DeltaNet& d = s.deltanet;
  const uint64_t v = uint64_t{d.v_heads} * d.head_dim, channels = 2 * uint64_t{d.groups} * d.head_dim + v;
  matrix(b + "attn_qkv.weight", channels, s.dim);
  matrix(b + "attn_gate.weight", v, s.dim);
  matrix(b + "ssm_beta.weight", d.v_heads, s.dim);
  matrix(b + "ssm_alpha.weight", d.v_heads, s.dim);
  p.push_back({b + "ssm_conv1d.weight", GgmlType::kF32, channels, d.conv_kernel, Init::kMatrix});
  vec(b + "ssm_dt.bias", d.v_heads, Init::kBias, 0.0f, -1.0f);
  vec(b + "ssm_a", d.v_heads, Init::kBias, -0.5f, 0.1f);
  vec(b + "ssm_norm.weight", d.head_dim, Init::kNorm, 0.0f, -1.0f);
  matrix(b + "ssm_out.weight", s.dim, v);
}

std::vector<TensorPlan> plan_tensors(const ModelSpec& s) {
  const uint64_t q = uint64_t{s.n_heads} * s.head_dim(), kv = uint64_t{s.n_kv_heads} * s.head_dim();
  const ArchitectureInfo& arch = *find_architecture(s.architecture);
  std::vector<TensorPlan> p;
  auto matrix = [&](std::string n, uint64_t rows, uint64_t cols) {
    const GgmlType t = matrix_type(s, n, cols);
    p.push_back({std::move(n), t, rows, cols, Init::kMatrix});
  };
  auto vec = [&](std::string n, uint64_t len, Init init, float mean = 0.0f, float std_dev = -1.0f) {
    p.push_back({std::move(n), GgmlType::kF32, 1, len, init, 1, mean, std_dev});
  };
  // Per-expert bias vectors: ggml dims [len, n_experts].
  auto vec_stack = [&](std::string n, uint64_t len) {
    p.push_back({std::move(n), GgmlType::kF32, s.n_experts, len, Init::kBias});
  };
  const bool gemma_scaled = arch.scale_embeddings && s.tied_embeddings;
  // Tied Gemma: norm weights near `mean` with the spread of U(0.8, 1.2) x mean, as the fixtures;
  // else the usual 1 +- 0.02.
  auto norm = [&](std::string n, float mean) {
    if (gemma_scaled) {
      vec(std::move(n), s.dim, Init::kNorm, mean, 0.115f * mean);
    } else {
      vec(std::move(n), s.dim, Init::kNorm);
    }
  };
  auto experts = [&](std::string n, uint64_t rows, uint64_t cols) {
    const GgmlType t = matrix_type(s, n, cols);
    p.push_back({std::move(n), t, rows * s.n_experts, cols, Init::kMatrix, s.n_experts});
  };
  const bool fused = arch.projections == ProjectionLayout::kFused;
  matrix("token_embd.weight", s.vocab_size, s.dim);
  if (gemma_scaled) p.back().std_dev = kGemmaEmbedStd * s.init_scale / std::sqrt(static_cast<float>(s.dim));
  for (uint32_t l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight", s.dim, Init::kNorm);
    if (s.recurrent_layer(l)) {
      add_deltanet(s, b, matrix, vec, p);
    } else if (fused) {
      matrix(b + "attn_qkv.weight", q + 2 * kv, s.dim);
    } else {
      matrix(b + "attn_q.weight", s.hybrid() ? 2 * q : q, s.dim);  // qwen35: each head's query, then its gate
      matrix(b + "attn_k.weight", kv, s.dim);
      matrix(b + "attn_v.weight", kv, s.dim);
    }
    if (arch.qkv_bias == TensorRule::kRequired) {  // qwen2
      vec(b + "attn_q.bias", q, Init::kBias);
      vec(b + "attn_k.bias", kv, Init::kBias);
      vec(b + "attn_v.bias", kv, Init::kBias);
    }
    if (arch.qk_norm == TensorRule::kRequired && !s.recurrent_layer(l)) {  // qwen3
      vec(b + "attn_q_norm.weight", s.head_dim(), Init::kNorm);
      vec(b + "attn_k_norm.weight", s.head_dim(), Init::kNorm);
    }
    if (!s.recurrent_layer(l)) matrix(b + "attn_output.weight", s.dim, q);
    if (arch.output_bias == TensorRule::kRequired) vec(b + "attn_output.bias", s.dim, Init::kBias);  // gpt-oss
    if (arch.sinks == TensorRule::kRequired) vec(b + "attn_sinks.weight", s.n_heads, Init::kBias, 0.0f, 1.0f);
    if (arch.post_norms) norm(b + "post_attention_norm.weight", gemma_scaled ? kGemmaPostNorm : 1.0f);
    // The pre-FFN norm (gpt-oss calls it post_attention_norm and has no post-norms).
    vec(b + std::string(arch.ffn_norm) + ".weight", s.dim, Init::kNorm);
    if (s.has_experts()) {  // the router stays F32, as llama-quantize leaves it
      p.push_back({b + "ffn_gate_inp.weight", GgmlType::kF32, s.n_experts, s.dim, Init::kMatrix});
      experts(b + "ffn_gate_exps.weight", s.expert_hidden_dim, s.dim);
      experts(b + "ffn_up_exps.weight", s.expert_hidden_dim, s.dim);
      experts(b + "ffn_down_exps.weight", s.dim, s.expert_hidden_dim);
      if (arch.expert_biases == TensorRule::kRequired) {  // gpt-oss: router and every expert's biases
        vec(b + "ffn_gate_inp.bias", s.n_experts, Init::kBias);
        vec_stack(b + "ffn_gate_exps.bias", s.expert_hidden_dim);
        vec_stack(b + "ffn_up_exps.bias", s.expert_hidden_dim);
        vec_stack(b + "ffn_down_exps.bias", s.dim);
      }
      if (const uint32_t sh = s.shared_hidden(); sh != 0) {  // qwen35moe: a shared expert and its F32 gate
        vec(b + "ffn_gate_inp_shexp.weight", s.dim, Init::kMatrix);
        matrix(b + "ffn_gate_shexp.weight", sh, s.dim);
        matrix(b + "ffn_up_shexp.weight", sh, s.dim);
        matrix(b + "ffn_down_shexp.weight", s.dim, sh);
      }
    } else if (fused) {  // gate rows then up rows in ffn_up
      matrix(b + "ffn_up.weight", 2 * uint64_t{s.hidden_dim}, s.dim);
      matrix(b + "ffn_down.weight", s.dim, s.hidden_dim);
    } else {
      matrix(b + "ffn_gate.weight", s.hidden_dim, s.dim);
      matrix(b + "ffn_up.weight", s.hidden_dim, s.dim);
      matrix(b + "ffn_down.weight", s.dim, s.hidden_dim);
    }
    if (arch.post_norms) norm(b + "post_ffw_norm.weight", gemma_scaled ? kGemmaPostNorm : 1.0f);
    if (arch.layer_output_scale) vec(b + "layer_output_scale.weight", 1, Init::kNorm, 1.0f, 0.0f);  // gemma4
  }
  norm("output_norm.weight", gemma_scaled ? kGemmaOutputNorm : 1.0f);
  // Gemma 4's global layers' rope factors, which llama.cpp requires: all 1 (no scaling).
  if (arch.arch == Arch::kGemma4) vec("rope_freqs.weight", s.head_dim() / 2, Init::kNorm, 1.0f, 0.0f);
  if (!s.tied_embeddings) matrix("output.weight", s.vocab_size, s.dim);
  return p;
}

void add_hyperparameters(gguf::GgufWriter& w, const ModelSpec& s) {
  using namespace gguf;
  const std::string a = s.architecture;  // the key prefix
  w.set_alignment(32);
  w.set("general.architecture", make_string(a));
  w.set("general.name", make_string(s.name));
  w.set("general.file_type", make_uint32(llama_file_type(s)));
  w.set("general.quantization_version", make_uint32(2));
  w.set(a + ".context_length", make_uint32(s.context_length));
  w.set(a + ".embedding_length", make_uint32(s.dim));
  w.set(a + ".block_count", make_uint32(s.n_layers));
  w.set(a + ".feed_forward_length", make_uint32(s.hidden_dim));
  w.set(a + ".attention.head_count", make_uint32(s.n_heads));
  w.set(a + ".attention.head_count_kv", make_uint32(s.n_kv_heads));
  w.set(a + ".rope.dimension_count", make_uint32(s.hybrid() ? s.head_dim() / 4 : s.head_dim()));
  if (s.hybrid()) {  // qwen35: the Gated DeltaNet layers' sizes and which layers they are
    // M-RoPE's sections of the roped pairs, which llama.cpp requires of a qwen35 file: Qwen3.5's
    // 11/11/10 of 32 pairs, scaled (text positions rotate every section alike, so any split reads
    // the same).
    const int32_t pairs = static_cast<int32_t>(s.head_dim() / 8), side = (pairs * 11 + 31) / 32;
    w.set(a + ".rope.dimension_sections", make_int32_array({side, side, pairs - 2 * side, 0}));
    const ModelSpec::DeltaNet& d = s.deltanet;
    w.set(a + ".ssm.conv_kernel", make_uint32(d.conv_kernel));
    w.set(a + ".ssm.state_size", make_uint32(d.head_dim));
    w.set(a + ".ssm.group_count", make_uint32(d.groups));
    w.set(a + ".ssm.time_step_rank", make_uint32(d.v_heads));
    w.set(a + ".ssm.inner_size", make_uint32(d.v_heads * d.head_dim));
    w.set(a + ".full_attention_interval", make_uint32(d.full_attention_interval));
  }
  if (s.shared_hidden() != 0) w.set(a + ".expert_shared_feed_forward_length", make_uint32(s.shared_hidden()));
  if (s.head_dim_override != 0) {
    w.set(a + ".attention.key_length", make_uint32(s.head_dim()));
    w.set(a + ".attention.value_length", make_uint32(s.head_dim()));
  }
  if (s.has_experts()) {
    w.set(a + ".expert_count", make_uint32(s.n_experts));
    w.set(a + ".expert_used_count", make_uint32(s.n_experts_used));
    w.set(a + ".expert_feed_forward_length", make_uint32(s.expert_hidden_dim));
  }
  w.set(a + ".rope.freq_base", make_float32(s.rope_freq_base));
  w.set(a + ".attention.layer_norm_rms_epsilon", make_float32(s.norm_eps));
  w.set(a + ".vocab_size", make_uint32(s.vocab_size));
  const ArchitectureInfo& arch = *find_architecture(s.architecture);
  // llama.cpp reads Gemma 4's window pattern only as a per-layer array, and requires it.
  const bool gemma4 = arch.arch == Arch::kGemma4;
  if (s.window != 0) {
    w.set(a + ".attention.sliding_window", make_uint32(s.window));
    if (s.window_period != 0 && !gemma4) {
      w.set(a + ".attention.sliding_window_pattern", make_uint32(s.window_period));
    }
    if (s.rope_freq_base_swa > 0.0f) w.set(a + ".rope.freq_base_swa", make_float32(s.rope_freq_base_swa));
  }
  if (gemma4) {
    // Gemma 4's keys, which llama.cpp requires: the window layers per layer, their head and rope
    // sizes and rope base (the same head size as the global layers here), no KV sharing and no
    // per-layer inputs.
    const uint32_t period = s.window_period != 0 ? s.window_period : arch.window_period;
    std::vector<gguf::Value> pattern;
    for (uint32_t l = 0; l < s.n_layers; ++l) {
      pattern.push_back(make_bool(s.window != 0 && slides_in_period(l, period)));
    }
    w.set(a + ".attention.sliding_window_pattern", make_array(gguf::ValueType::kBool, std::move(pattern)));
    w.set(a + ".attention.key_length_swa", make_uint32(s.head_dim()));
    w.set(a + ".attention.value_length_swa", make_uint32(s.head_dim()));
    w.set(a + ".rope.dimension_count_swa", make_uint32(s.head_dim()));
    if (s.window == 0 || s.rope_freq_base_swa <= 0.0f) {  // the window keys above did not set it
      const float base = arch.local_rope_base > 0.0f ? arch.local_rope_base : s.rope_freq_base;
      w.set(a + ".rope.freq_base_swa", make_float32(base));
    }
    w.set(a + ".attention.shared_kv_layers", make_uint32(0));
    w.set(a + ".embedding_length_per_layer_input", make_uint32(0));
  }
  if (arch.softcap_keys) {  // gemma2 files carry both keys
    w.set(a + ".attn_logit_softcapping", make_float32(s.attn_softcap.value_or(arch.attn_softcap)));
    w.set(a + ".final_logit_softcapping", make_float32(s.final_softcap.value_or(arch.final_softcap)));
  }
  if (s.yarn_factor > 1.0f) {  // as converted gpt-oss files
    w.set(a + ".rope.scaling.type", make_string("yarn"));
    w.set(a + ".rope.scaling.factor", make_float32(s.yarn_factor));
    const uint32_t original = s.yarn_original_context != 0
                                  ? s.yarn_original_context
                                  : std::max<uint32_t>(1, static_cast<uint32_t>(s.context_length / s.yarn_factor));
    w.set(a + ".rope.scaling.original_context_length", make_uint32(original));
  }
}

// The memorized text's successions (GenerateOptions::memorized_ids), as the embedding and output
// rows write them.
//  - Token x's embedding is its random row u_x times kEmbedGain: the residual stream stays that
//    direction, whatever the random layers add (their outputs do not grow with the stream, which
//    RMSNorm normalises before each layer reads it).
//  - Output row y is its random row plus u_x of every x the text follows by y. After the final
//    norm the state is about u_x / sigma (sigma: the rows' standard deviation), so y's logit gains
//    |u_x|^2 / sigma = dim * sigma, against random logits of standard deviation sqrt(dim) * sigma:
//    sqrt(dim) standard deviations (45 at dim 2048) is a margin that quantization does not close.
struct Memorized {
  static constexpr float kEmbedGain = 32.0f;
  size_t embed_index = 0;  // token_embd's place in the plan: the seed of u_x
  std::unordered_map<int32_t, std::vector<int32_t>> before;  // y -> every x followed by y
};

// Row r of tensor `index`, random: N(mean, std_dev^2) seeded by the tensor and row alone.
void random_row(const ModelSpec& s, size_t index, uint64_t r, float mean, float std_dev, std::vector<float>& row) {
  uint64_t seed_state = s.seed ^ (static_cast<uint64_t>(index) << 40) ^ r;
  NormalRng rng(splitmix64(seed_state));
  for (float& v : row) v = mean + std_dev * rng.next();
}

// Fills rows [r0, r1) of tensor `index` (row-seeded, so the result is independent of threading
// and chunking) and encodes them into out (row-major, ggml_row_size bytes per row).
void fill_rows(const ModelSpec& s, size_t index, const TensorPlan& t, uint64_t r0, uint64_t r1, const Memorized* memo,
               uint8_t* out) {
  std::vector<float> row(t.cols), other(t.cols);
  const size_t row_bytes = ggml_row_size(t.type, t.cols);
  // Norms ~ 1 ± 0.02, biases ~ N(0, 0.1²) (small next to the projections' unit-scale outputs).
  const float std_dev = t.std_dev >= 0.0f        ? t.std_dev
                        : t.init == Init::kNorm   ? 0.02f
                        : t.init == Init::kBias ? 0.1f
                                                : s.init_scale / std::sqrt(static_cast<float>(t.cols));
  const float mean = t.std_dev >= 0.0f ? t.mean : t.init == Init::kNorm ? 1.0f : 0.0f;
  const bool embedding = memo != nullptr && index == memo->embed_index;
  const bool output = memo != nullptr && t.name == "output.weight";
  for (uint64_t r = r0; r < r1; ++r) {
    random_row(s, index, r, mean, std_dev, row);
    if (embedding) {
      for (float& v : row) v *= Memorized::kEmbedGain;
    } else if (output) {
      const auto found = memo->before.find(static_cast<int32_t>(r));
      if (found != memo->before.end()) {
        for (const int32_t x : found->second) {
          random_row(s, memo->embed_index, static_cast<uint64_t>(x), mean, std_dev, other);
          for (size_t c = 0; c < row.size(); ++c) row[c] += other[c];
        }
      }
    }
    quantize_row(t.type, row.data(), out + (r - r0) * row_bytes, t.cols);
  }
}

std::optional<Memorized> plan_memorized(const ModelSpec& s, const std::vector<TensorPlan>& plan,
                                        const GenerateOptions& options) {
  const std::vector<int32_t>& ids = options.memorized_ids;
  if (!options.memorized_text) return std::nullopt;
  if (s.tied_embeddings) {
    throw Error(ErrorCode::kInvalidArgument, "a memorized text needs untied embeddings (--untied): the output rows "
                                             "carry the text, and the embedding rows are other rows");
  }
  if (ids.size() < 2) throw Error(ErrorCode::kInvalidArgument, "a memorized text needs two tokens or more");
  Memorized m;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].name == "token_embd.weight") m.embed_index = i;
  }
  // An embedding std of init_scale / sqrt(dim) for u_x is what output's rows use too (same cols).
  if (plan[m.embed_index].std_dev >= 0.0f) {
    throw Error(ErrorCode::kInvalidArgument, "a memorized text needs an architecture whose embeddings are plain random rows");
  }
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<uint32_t>(id) >= s.vocab_size) {
      throw Error(ErrorCode::kInvalidArgument, "memorized token id " + std::to_string(id) +
                                                   " is outside the vocabulary of " + std::to_string(s.vocab_size));
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t x = ids[i], y = ids[(i + 1) % ids.size()];
    std::vector<int32_t>& xs = m.before[y];
    if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
  }
  return m;
}

}  // namespace

GenerateResult write_model(const ModelSpec& spec, const std::string& path, const GenerateOptions& options) {
  validate(spec);
  gguf::GgufWriter w;
  add_hyperparameters(w, spec);
  GenerateResult result;
  if (options.vocab_from != nullptr) {
    result.vocab_size = copy_vocab(*options.vocab_from, w);
    if (result.vocab_size != spec.vocab_size) {
      throw Error(ErrorCode::kInvalidArgument, "vocab size " + std::to_string(spec.vocab_size) +
                                                   " differs from the copied vocabulary's " + std::to_string(result.vocab_size));
    }
  } else {
    add_synthetic_vocab(w, spec.vocab_size);
    result.vocab_size = spec.vocab_size;
  }
  const std::vector<TensorPlan> plan = plan_tensors(spec);
  const std::optional<Memorized> memorized = plan_memorized(spec, plan, options);
  if (memorized) w.set(kMemorizedKey, gguf::make_string(*options.memorized_text));
  const Memorized* memo = memorized ? &*memorized : nullptr;
  for (const TensorPlan& t : plan) {
    w.add_tensor(t.name, t.type, t.stack > 1                              ? std::vector<uint64_t>{t.cols, t.rows / t.stack, t.stack}
                                 : t.init != Init::kMatrix && t.rows == 1 ? std::vector<uint64_t>{t.cols}
                                                                          : std::vector<uint64_t>{t.cols, t.rows});
  }
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : w.tensors()) total += t.nbytes;

  const unsigned threads = std::max(1u, options.threads != 0 ? options.threads : std::thread::hardware_concurrency());
  gguf::GgufFileSink sink(w, path);
  std::vector<uint8_t> chunk;
  uint64_t done = 0;
  for (size_t index = 0; index < plan.size(); ++index) {
    const TensorPlan& t = plan[index];
    const size_t row_bytes = ggml_row_size(t.type, t.cols);
    // About 8 MiB of encoded rows per chunk: bounded memory, large sequential writes.
    const uint64_t rows_per_chunk = std::max<uint64_t>(1, (8u << 20) / row_bytes);
    for (uint64_t r0 = 0; r0 < t.rows; r0 += rows_per_chunk) {
      const uint64_t r1 = std::min(t.rows, r0 + rows_per_chunk);
      chunk.resize(static_cast<size_t>((r1 - r0) * row_bytes));
      const uint64_t n_workers = std::min<uint64_t>(threads, r1 - r0);
      const uint64_t per_worker = (r1 - r0 + n_workers - 1) / n_workers;
      std::vector<std::thread> workers;
      std::vector<std::exception_ptr> errors(n_workers);  // exceptions never cross the thread boundary
      for (uint64_t k = 1; k < n_workers; ++k) {
        const uint64_t a = r0 + k * per_worker, b = std::min(r1, a + per_worker);
        if (a >= b) continue;
        uint8_t* out = chunk.data() + (a - r0) * row_bytes;
        workers.emplace_back([&spec, &t, &errors, memo, index, a, b, k, out] {
          try {
            fill_rows(spec, index, t, a, b, memo, out);
          } catch (...) {
            errors[k] = std::current_exception();
          }
        });
      }
      try {
        fill_rows(spec, index, t, r0, std::min(r1, r0 + per_worker), memo, chunk.data());
      } catch (...) {
        errors[0] = std::current_exception();
      }
      for (std::thread& th : workers) th.join();
      for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
      }
      sink.write(chunk);
      done += chunk.size();
      if (options.progress) options.progress(done, total);
    }
  }
  sink.finish();
  result.n_tensors = plan.size();
  result.file_bytes = w.file_size();
  return result;
}

}  // namespace vks::tools
