#pragma once
// A loaded llama GGUF: the mapped file, its hyperparameters and views of every weight tensor.
// Weights stay in the mmap (no copy); matrices keep their GGUF type (F32/F16/BF16/Q8_0/Q4_0).
#include <memory>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_config.h"

namespace vks {

// A weight tensor inside the mapping. A matrix W of `rows` x `cols` maps an input of `cols` to an
// output of `rows` (ggml dims: dims[0] = cols, dims[1] = rows); each row is ggml_row_size bytes.
struct TensorRef {
  std::string name;
  GgmlType type = GgmlType::kF32;
  uint64_t rows = 1;
  uint64_t cols = 0;
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  const uint8_t* row(uint64_t r) const;  // pointer to row r
};

struct LayerWeights {
  TensorRef attn_norm;  // [dim]                          blk.N.attn_norm.weight (F32)
  TensorRef wq;         // [n_heads*head_dim, dim]        blk.N.attn_q.weight
  TensorRef wk;         // [n_kv_heads*head_dim, dim]     blk.N.attn_k.weight
  TensorRef wv;         // [n_kv_heads*head_dim, dim]     blk.N.attn_v.weight
  TensorRef wo;         // [dim, n_heads*head_dim]        blk.N.attn_output.weight
  TensorRef ffn_norm;   // [dim]                          blk.N.ffn_norm.weight (F32)
  TensorRef w_gate;     // [hidden_dim, dim]              blk.N.ffn_gate.weight
  TensorRef w_up;       // [hidden_dim, dim]              blk.N.ffn_up.weight
  TensorRef w_down;     // [dim, hidden_dim]              blk.N.ffn_down.weight
};

struct LlamaWeights {
  TensorRef token_embd;            // [vocab_size, dim]  token_embd.weight
  std::vector<LayerWeights> layers;
  TensorRef output_norm;           // [dim]              output_norm.weight (F32)
  TensorRef output;                // [vocab_size, dim]  output.weight, or token_embd if tied
};

class LlamaModel {
 public:
  // Opens, parses and validates a GGUF: every tensor present with the expected shape and a
  // supported type. Throws vks::Error with a message that says what is wrong and what to do.
  static std::unique_ptr<LlamaModel> load(const std::string& path);
  static std::unique_ptr<LlamaModel> from_file(gguf::GgufFile file);

  const gguf::GgufFile& file() const { return file_; }
  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }

 private:
  LlamaModel(gguf::GgufFile file, LlamaConfig config);
  gguf::GgufFile file_;
  LlamaConfig config_;
  LlamaWeights weights_;
};

// Dequantize one row of a weight into floats (cols values).
void dequantize_tensor_row(const TensorRef& t, uint64_t row, float* out);

}  // namespace vks
