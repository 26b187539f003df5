#pragma once
// The Vulkan compute backend: weights, KV cache and every activation buffer allocated once at
// start-up; each step is one command buffer (the whole forward pass), one submit, one wait, and
// only the greedy ids (plus full logits rows for kFull sequences) are read back. A decode step's
// command buffer is recorded once per shape and replayed (step_replay.h). A layer whose
// experts stay in host memory (RunnerOptions::cpu_expert_layers) ends a submission where its
// experts start and begins the next after the CPU ran them (host_experts.h).
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#include "engine/vulkan/core/buffer.h"
#include "engine/vulkan/core/command.h"
#include "engine/vulkan/core/device.h"
#include "engine/vulkan/core/kernel.h"
#include "engine/vulkan/kernels/ops.h"
#include "engine/vulkan/runner/device_weights.h"
#include "engine/vulkan/runner/host_experts.h"
#include "engine/vulkan/runner/kv_cache.h"
#include "engine/vulkan/runner/recurrent_state_buffers.h"
#include "engine/vulkan/runner/runner_options.h"
#include "engine/vulkan/runner/step_inputs.h"
#include "engine/vulkan/runner/step_profiler.h"
#include "engine/vulkan/runner/step_replay.h"

namespace vks {

class VulkanRunner final : public ModelRunner {
 public:
  // `model` must outlive the runner. Throws vks::Error (kNotFound: no matching device; kDevice;
  // kOutOfMemory; kUnsupported: a model shape the kernels cannot run).
  VulkanRunner(const LlamaModel& model, const RunnerOptions& options);
  ~VulkanRunner() override;

  const LlamaConfig& config() const override { return config_; }
  std::string device_name() const override;
  bool uses_device_heap() const override { return !device_info().uma; }
  int32_t cpu_expert_layers() const override { return static_cast<int32_t>(weights_->split.host_layers); }
  // Which weight-matrix kernels this runner records (RunnerOptions::matmul_kernels, else the device's).
  vk::MatmulFamily matmul_family() const { return ops_->matmul_family(); }
  const vk::DeviceInfo& device_info() const { return device_.info(); }
  // The pipelines built so far (vk::KernelRegistry::fingerprint).
  uint64_t kernel_fingerprint() const { return kernels_->fingerprint(); }
  int32_t block_size() const override { return limits_.block_size; }
  int32_t num_blocks() const override { return limits_.num_blocks; }
  uint64_t kv_bytes_per_token() const override { return kv_->shape().bytes_per_token(); }
  uint64_t kv_window_bytes_per_token() const override { return kv_->shape().window_bytes_per_token(); }
  int32_t num_window_blocks() const override { return kv_->shape().window_blocks; }
  std::string kv_type() const override;
  int32_t max_step_tokens() const override { return limits_.max_step_tokens; }
  int32_t max_step_seqs() const override { return limits_.max_step_seqs; }
  int32_t recurrent_state_slots() const override { return limits_.state_slots; }
  int32_t recurrent_checkpoint_slots() const override { return states_.slots() - limits_.state_slots; }
  // A device copy, run and waited for at once (between steps, on the engine thread).
  void copy_recurrent_state(int32_t from, int32_t to) override;
  void step(const StepBatch& batch, StepResult& out) override;

  // Per-op GPU time (benchmarks): when on, every step adds each op's milliseconds into profile().
  void set_profiling(bool on);
  const std::map<std::string, double>& profile() const { return profile_ms_; }
  uint32_t last_dispatch_count() const { return last_dispatches_; }
  // Host time of the last step before its submission: packing its inputs and recording its command
  // buffer, in milliseconds (what recording a step once and replaying it would save; issue 35).
  double last_record_ms() const { return last_record_ms_; }
  // Whether the last step submitted a recording made for an earlier step (step_replay.h), and how
  // many decode steps were recorded for replay so far.
  bool last_step_replayed() const { return last_replayed_; }
  uint64_t replay_recordings() const { return replay_recordings_; }
  // The lanes attention's keys per split (RunnerOptions::attention_split_keys, resolved).
  uint32_t attention_split_keys() const { return attn_split_keys_; }
  // Submissions of the last step: 1, plus one per layer whose experts ran on the CPU.
  uint32_t last_submit_count() const { return last_submits_; }
  // Which layers' experts stay in host memory and run on the CPU, and their bytes.
  const vk::ExpertSplit& expert_split() const { return weights_->split; }
  uint64_t host_weight_bytes() const override { return weights_->split.host_bytes; }

 private:
  // A per-step input or output array: device buffer, plus a host-side twin and a copy when the
  // device buffer is not host-visible.
  struct IoBuffer {
    vk::Buffer device;
    vk::Buffer host;  // invalid when `device` is mapped
    void* mapped() const { return host.valid() ? host.mapped() : device.mapped(); }
    const vk::Buffer& host_side() const { return host.valid() ? host : device; }
  };
  void create_pipelines();
  IoBuffer make_io(uint64_t bytes, bool input);
  // Writes an input array into its mapped buffer.
  void stage(IoBuffer& io, const void* data, uint64_t bytes);
  // Copies a staged input to the device where it has a buffer of its own.
  static void record_upload(vk::CommandBuffer& cmd, const IoBuffer& io, uint64_t bytes);
  // The step's inputs into their mapped buffers (host work, every step), and the commands that
  // hand them to the kernels (part of the recording).
  void stage_inputs(const StepInputs& in, const StepBatch& batch);
  void record_uploads(vk::CommandBuffer& cmd, const StepInputs& in);
  // A whole step: uploads, forward pass, read-backs.
  void record_step(vk::CommandBuffer& cmd, const StepInputs& in);
  void record_forward(vk::CommandBuffer& cmd, const StepInputs& in);
  // The greedy ids, logits rows and hidden rows of the step to host-visible memory.
  void record_readbacks(vk::CommandBuffer& cmd, const StepInputs& in);
  void record_layer(vk::CommandBuffer& cmd, uint32_t layer, const StepInputs& in);
  // A layer's mixer, from rmsnorm(x) to the residual add: attention over the paged KV, or a Gated
  // DeltaNet over the sequences' recurrent states (deltanet_mixer.cpp).
  void record_attention_mixer(vk::CommandBuffer& cmd, uint32_t layer, const StepInputs& in);
  void record_deltanet_mixer(vk::CommandBuffer& cmd, uint32_t layer, const StepInputs& in);
  // The mixer's input products (DeviceLayerWeights::qkv) of rmsnorm(x) into qkv_.
  void record_input_products(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n_tokens);
  void record_logits(vk::CommandBuffer& cmd, const StepInputs& in);
  void record_hidden(vk::CommandBuffer& cmd, const StepInputs& in);
  // The rows family's kernel for n_tokens (RunnerOptions::matvec_max_tokens, else the kernels' choice).
  vk::WeightOp weight_op(uint32_t n_tokens) const;
  // xn = rmsnorm(x) with `norm`, unless the products norm x themselves (Ops::fuses_rmsnorm).
  void norm_for_matmul(vk::CommandBuffer& cmd, const vk::Buffer& norm, uint32_t n_tokens);
  // y = w rmsnorm(x): from xn, or fused (Ops::matmul_rmsnorm); swiglu: the SwiGLU epilogue too.
  void normed_matmul(vk::CommandBuffer& cmd, const vk::DeviceMatrix& w, const vk::Buffer& norm, vk::BufferView y,
                     uint32_t y_stride, uint32_t n_tokens, bool swiglu = false);
  // Whether a block's gate|up product stores silu(gate) * up itself (Ops::matmul_swiglu).
  static bool swiglu_epilogue(const vk::DeviceFfn& f);
  // The feed-forward block of a layer: dense (one expert over every token), or routed experts.
  void record_dense_ffn(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n_tokens);
  // out = act(gate, up) of a block's rows (gate at gate's row start, up at `up`), by its activation.
  void record_activation(vk::CommandBuffer& cmd, const vk::DeviceFfn& f, vk::BufferView gate, vk::BufferView up,
                         uint32_t stride, uint32_t n_rows);
  // Where a sublayer's product lands: x_ itself (accumulating), or sub_ where a post-norm follows.
  vk::BufferView sublayer_out(const vk::Buffer& post_norm) { return post_norm.valid() ? sub_.view() : x_.view(); }
  // After a sublayer's product into sublayer_out: its bias, then (post-norm) x += rmsnorm(sub_).
  void finish_sublayer(vk::CommandBuffer& cmd, const vk::Buffer& bias, const vk::Buffer& post_norm, uint32_t n_tokens);
  // A mixer's output (att_, rows q_s_ apart) through its output matrix into the residual: the
  // product (fused with the add where no post-norm follows), then finish_sublayer. label: the
  // product's name in step profiles.
  void record_mixer_output(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n_tokens,
                           const char* label);
  void record_expert_ffn(vk::CommandBuffer& cmd, uint32_t layer, uint32_t n_tokens);
  // A host layer's experts: xn_ (and x_) to the host, submit and wait, the CPU's sum back into
  // the residual in a new submission (cmd begun again).
  void run_host_experts(vk::CommandBuffer& cmd, uint32_t layer, uint32_t n_tokens);
  // After the routed sum landed in target (x_, or sub_ where a post-norm follows): the experts'
  // post-norm, the shared block's output, the sublayer's end.
  void record_expert_tail(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, vk::BufferView target,
                          uint32_t n_tokens);
  // Ends cmd, submits it and waits; the step's dispatches counted.
  void submit_and_wait(vk::CommandBuffer& cmd);
  // Submits an ended recording and waits.
  void submit_recorded(const vk::CommandBuffer& cmd);
  // Gemma 4's per-layer inputs of the step's tokens into per_layer_in_ (after the embedding), and
  // layer l's use of its slice (at the layer's end).
  void record_per_layer_inputs(vk::CommandBuffer& cmd, uint32_t n_tokens);
  void record_per_layer_input(vk::CommandBuffer& cmd, uint32_t layer, uint32_t n_tokens);
  // The shared block beside the experts over xn_ into shared_out_ (post-normed where its norms split).
  void record_shared_ffn(vk::CommandBuffer& cmd, const vk::DeviceLayerWeights& L, uint32_t n_tokens);
  void matmul(vk::CommandBuffer& cmd, const vk::DeviceMatrix& w, vk::BufferView x, uint32_t x_stride,
              vk::BufferView y, uint32_t y_stride, uint32_t n_tokens, bool accumulate);
  void mark(vk::CommandBuffer& cmd, const char* label);
  void barrier(vk::CommandBuffer& cmd) { cmd.barrier(vk::Stage::kCompute, vk::Stage::kCompute); }

  const LlamaModel& model_;
  LlamaConfig config_;
  RunnerOptions options_;
  StepLimits limits_;
  vk::Device device_;
  std::optional<vk::KernelRegistry> kernels_;
  std::optional<vk::Ops> ops_;
  std::unique_ptr<vk::DeviceWeights> weights_;
  std::optional<vk::KvCache> kv_;

  // Row strides (floats), each a multiple of 4 so every row view starts 16-byte aligned.
  uint32_t dim_s_ = 0, qkv_s_ = 0, q_s_ = 0, gate_up_s_ = 0, vocab_s_ = 0, dn_conv_s_ = 0;
  // Activations [max_step_tokens][stride] unless noted.
  vk::Buffer x_;       // residual stream [dim]
  vk::Buffer xn_;      // normed input of the attention / feed-forward block [dim] (none where the products norm x)
  vk::Buffer qkv_;     // [q_dim | k kv_dim | v kv_dim (| gate q_dim)], or a DeltaNet layer's [qkv | z | beta | alpha]
  vk::Buffer att_;     // attention output [q_dim] (a DeltaNet layer's gated output [v_dim])
  vk::Buffer attn_partials_;  // lanes family: attention split states (vk::attention_partials_bytes)
  vk::Buffer attn_split_counts_;  // and their counts (vk::attention_split_counts_bytes), zero between dispatches
  vk::Buffer gate_up_;  // [gate hidden | up hidden], then silu(gate) * up in the gate half
  vk::Buffer sub_;     // [max_step_tokens][dim] a sublayer's output before its post-norm (Gemma)
  vk::Buffer xo_;      // [max_step_seqs][dim] final-normed rows that produce logits
  vk::Buffer q8_;      // the dot family's Q8 rows of a product's x (Ops::bind_q8_scratch)
  // Expert layers (see expert_plan.h), all written on the device: the router's logits, each
  // (token, choice)'s expert and weight, the plan's int32 arrays and group slots, each (token,
  // choice)'s normed input, gate|up and output rows grouped by expert.
  uint32_t router_s_ = 0;
  vk::Buffer router_logits_, expert_ids_, expert_weights_, expert_gather_, expert_rows_, expert_slots_,
      expert_row_expert_;
  vk::Buffer expert_in_, expert_gate_up_, expert_out_;
  vk::Buffer shared_out_;  // [dim] the shared block's output beside the experts (FfnSpec::has_shared)
  vk::Buffer router_in_;   // [dim] the router's input where it is not xn_ (RouterInput::kScaledNorm)
  vk::Buffer shared_gate_;  // [4] the shared block's gate logit (FfnSpec::shared_gated)
  // Gated DeltaNet layers: their states, the conv's output [conv_channels], and the step's
  // sequences as the kernels read them (deltanet_kernels.h), with the longest chunk's tokens.
  vk::RecurrentStateBuffers states_;
  vk::Buffer dn_conv_;
  IoBuffer seq_states_;
  std::vector<int32_t> seq_states_host_;
  uint32_t longest_chunk_ = 0;
  // Per-layer inputs [n_layers * P] (LlamaConfig::per_layer_input_dim): the step's, the token rows
  // while they are formed, and one layer's gate (at the same stride, so it pairs with a slice).
  uint32_t per_layer_s_ = 0;
  vk::Buffer per_layer_in_, per_layer_tok_, per_layer_gate_;
  // Per-step I/O.
  IoBuffer tokens_, positions_, slots_, token_seq_, block_tables_;  // int32 inputs
  IoBuffer window_slots_, window_block_tables_;  // the window pool's (only with one)
  IoBuffer logits_;    // f32 [max_step_seqs][vocab]
  IoBuffer ids_;       // int32 [max_step_seqs]
  IoBuffer hidden_;    // f32 [max_step_tokens][dim] final-normed states of kHidden rows (embeddings)

  // Layers whose experts run on the CPU: their runner, the rows the CPU reads (the experts'
  // normed inputs, and the residual where the router norms it itself) and the sum it writes.
  std::unique_ptr<vk::HostExperts> host_experts_;
  IoBuffer host_xn_, host_x_, host_out_;

  vk::CommandBuffer cmd_;
  std::optional<vk::StepReplays> replays_;  // RunnerOptions::replay_decode_steps
  uint32_t attn_split_keys_ = 0;  // RunnerOptions::attention_split_keys, resolved before anything uses it
  vk::Fence fence_;
  StepInputs inputs_;
  std::unique_ptr<vk::StepProfiler> profiler_;
  std::map<std::string, double> profile_ms_;
  uint32_t last_dispatches_ = 0;
  double last_record_ms_ = 0;
  uint32_t last_submits_ = 0;
  bool last_replayed_ = false;
  uint64_t replay_recordings_ = 0;
};

}  // namespace vks
