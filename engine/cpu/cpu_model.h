#pragma once
// The forward pass for one sequence, one token at a time (the layer code is cpu_layer.h's, shared
// with CpuRunner). The oracle the Vulkan kernels and the engine are tested against.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/cpu/cpu_layer.h"
#include "engine/model/llama_model.h"

namespace vks {

class CpuModel {
 public:
  // threads: 0 = hardware concurrency. max_seq_len: KV cache length; 0 = the model's context
  // length capped at 4096 (the cache is n_layers * max_seq_len * kv_dim * 2 floats).
  explicit CpuModel(const LlamaModel& model, int threads = 0, int32_t max_seq_len = 0);

  // Runs `token` at position `pos` (positions 0..pos-1 must have been run since the last reset)
  // and returns the logits [vocab_size]. A model with recurrent layers (Gated DeltaNet) restarts at
  // position 0 and otherwise only continues at the next position. Throws vks::Error(kInvalidArgument) for a token outside
  // the vocabulary or a position outside [0, max_seq_len) or not following the previous one.
  const std::vector<float>& forward(int32_t token, int32_t pos);
  void reset() { n_cached_ = 0; }
  // The hidden state of the last forward() token after the final RMSNorm (before the output
  // projection): what embeddings pool. [dim]
  std::vector<float> final_hidden() const;

  const LlamaConfig& config() const { return config_; }
  int32_t max_seq_len() const { return max_seq_len_; }

 private:
  const LlamaModel& model_;
  const LlamaConfig& config_;
  int32_t max_seq_len_ = 0;
  int32_t n_cached_ = 0;  // positions in the KV cache
  ThreadPool pool_;

  std::unique_ptr<CpuModelVectors> vectors_;  // norms, biases, rope factors in F32

  // KV cache, per layer: [max_seq_len, kv_dim], rotated keys.
  std::vector<std::vector<float>> key_cache_;
  std::vector<std::vector<float>> value_cache_;
  RecurrentStatePool states_;  // the DeltaNet layers' state of the one sequence

  CpuActivations acts_;         // of the current token
  std::vector<float> logits_;   // [vocab_size]
};

// F32 copy of a vector weight (norms), dequantized from its GGUF type.
std::vector<float> dequantize_vector(const TensorRef& t);

}  // namespace vks
