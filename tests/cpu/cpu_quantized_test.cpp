// Quantized and half-precision weights (synthetic models written by the project's generator):
// token-by-token CpuModel and a one-step CpuRunner prefill give the same bits, and the logits
// stay close to those of the same model in F32.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_runner.h"
#include "engine/cpu/cpu_weights.h"
#include "engine/cpu/quant/packed_rows.h"
#include "engine/model/llama_model.h"
#include "tools/make_model/model_generator.h"

namespace vks {
namespace {

class TempModel {
 public:
  // width: the model dimension in place of the preset's (hidden 3 times it), 0 for the preset's.
  explicit TempModel(GgmlType type, const std::string& preset = "tiny", uint32_t width = 0) {
    tools::ModelSpec spec = *tools::preset(preset);
    spec.type = type;
    if (width != 0) {
      spec.dim = width;
      spec.hidden_dim = 3 * width;
    }
    spec.seed = 7;
    path_ = (std::filesystem::temp_directory_path() /
             ("vks_cpu_quantized_" + std::to_string(::getpid()) + "_" + preset + "_" +
              std::to_string(static_cast<int>(type)) + ".gguf"))
                .string();
    tools::GenerateOptions options;
    options.threads = 1;
    tools::write_model(spec, path_, options);
    model_ = LlamaModel::load(path_);
  }
  ~TempModel() {
    model_.reset();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const LlamaModel& model() const { return *model_; }

 private:
  std::string path_;
  std::unique_ptr<LlamaModel> model_;
};

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 511, 8, 99, 250, 3};

// Logits after the prompt, token by token through CpuModel.
std::vector<float> model_logits(const LlamaModel& m) {
  CpuModel cpu(m, 2);
  std::vector<float> logits;
  for (size_t i = 0; i < kPrompt.size(); ++i) logits = cpu.forward(kPrompt[i], static_cast<int32_t>(i));
  return logits;
}

// Logits after the prompt through CpuRunner, as steps of `chunk` tokens (one prefill step when
// chunk >= the prompt).
// pack: the runner's copy of the matrices packed where the kernel level reads them packed (the
// default); packed (when given): how many it packed.
std::vector<float> runner_logits(const LlamaModel& m, size_t chunk = 1 << 20,
                                 const std::vector<int32_t>& prompt = kPrompt, bool pack = true,
                                 size_t* packed = nullptr) {
  CpuRunnerOptions o;
  o.num_blocks = 4;
  o.threads = 2;
  o.pack_weights = pack;
  CpuRunner runner(m, o);
  if (packed != nullptr) *packed = runner.packed_matrices();
  StepResult result;
  for (size_t at = 0; at < prompt.size(); at += chunk) {
    const size_t n = std::min(chunk, prompt.size() - at);
    StepBatch batch;
    batch.tokens.assign(prompt.begin() + static_cast<std::ptrdiff_t>(at),
                        prompt.begin() + static_cast<std::ptrdiff_t>(at + n));
    SeqChunk seq;
    seq.n_tokens = static_cast<int32_t>(n);
    seq.n_past = static_cast<int32_t>(at);
    for (size_t i = 0; i * runner.block_size() < prompt.size(); ++i) seq.block_table.push_back(static_cast<int32_t>(i));
    seq.logits = at + n == prompt.size() ? LogitsMode::kFull : LogitsMode::kNone;
    batch.seqs = {seq};
    batch.finalize(runner.block_size());
    runner.step(batch, result);
  }
  return result.logits;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
    norm += want[i] * static_cast<double>(want[i]);
  }
  return std::sqrt(err / norm);
}

// The serving runner computes float weights as the reference does (bit for bit), and quantized
// ones with activations quantized per block (engine/cpu/quant): the same bits whether the prompt
// is one step or one token a step.
TEST(CpuQuantized, SingleTokenAndBatchedPathsAgreeBitwise) {
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1}) {
    TempModel m(type);
    const std::vector<float> batched = runner_logits(m.model());
    ASSERT_EQ(batched.size(), 512u);
    EXPECT_EQ(runner_logits(m.model(), 1), batched) << ggml_type_name(type);
    EXPECT_EQ(runner_logits(m.model(), 3), batched) << ggml_type_name(type);
    if (type == GgmlType::kF16 || type == GgmlType::kBF16) {
      EXPECT_EQ(model_logits(m.model()), batched) << ggml_type_name(type);
    }
  }
}

// The K-quants (rows of 256, so "tiny" widened to dim 256), with a prompt of 20 tokens: one step
// of 20 runs the amx level's Q4_K tiles (13 tokens or more), steps of 1, 3 and 8 its vector path,
// steps of 13 both; all give the same bits (at every level).
TEST(CpuQuantized, KQuantPathsAgreeBitwise) {
  std::vector<int32_t> prompt = kPrompt;
  for (int32_t i = 0; prompt.size() < 20; ++i) prompt.push_back(100 + 7 * i);
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    TempModel m(type, "tiny", 256);
    ASSERT_EQ(m.model().weights().layers[0].wq.type, type);
    const std::vector<float> batched = runner_logits(m.model(), 1 << 20, prompt);
    ASSERT_EQ(batched.size(), 512u);
    for (size_t chunk : {1u, 3u, 8u, 13u}) {
      EXPECT_EQ(runner_logits(m.model(), chunk, prompt), batched) << ggml_type_name(type) << " steps of " << chunk;
    }
  }
}

// The same for an expert model: each step's experts run in one pool dispatch per matrix over the
// tokens that chose them, so a prompt in one step groups its 9 tokens by expert and one token a step
// runs 2 experts alone; float weights still give the reference's bits (CpuModel runs one product
// at a time).
TEST(CpuQuantized, ExpertModelPathsAgreeBitwise) {
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_1}) {
    TempModel m(type, "tiny-moe");
    ASSERT_TRUE(m.model().config().layers[0].ffn.routed());
    const std::vector<float> batched = runner_logits(m.model());
    ASSERT_EQ(batched.size(), 512u);
    EXPECT_EQ(runner_logits(m.model(), 1), batched) << ggml_type_name(type);
    EXPECT_EQ(runner_logits(m.model(), 4), batched) << ggml_type_name(type);
    if (type == GgmlType::kF16) {
      EXPECT_EQ(model_logits(m.model()), batched) << ggml_type_name(type);
    }
  }
}

// The runner's copy of the matrices (cpu_weights.h): every step matrix copied, the packed ones
// (where the level packs their type) holding their GGUF bytes rearranged, the others the same
// bytes; the model's own weights untouched. Without the copy, the model's weights themselves.
TEST(CpuQuantized, RunnerWeightsCopyEveryStepMatrixAndPackWhatTheLevelReadsPacked) {
  const cpuq::CpuIsa isa = cpuq::active_isa();
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_1}) {
    for (const char* preset : {"tiny", "tiny-moe"}) {
      TempModel m(type, preset);
      const CpuWeights copy(m.model(), true, true, isa);
      ASSERT_TRUE(copy.residence().copied) << copy.residence().why_not;
      const std::vector<const TensorRef*> originals = step_matrices(m.model().weights());
      const std::vector<const TensorRef*> copies = step_matrices(copy.weights());
      ASSERT_EQ(copies.size(), originals.size());
      size_t packed = 0;
      for (size_t i = 0; i < copies.size(); ++i) {
        const TensorRef& o = *originals[i];
        const TensorRef& c = *copies[i];
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + preset + " " + o.name);
        EXPECT_NE(c.data, o.data);
        EXPECT_EQ(o.layout, WeightLayout::kGguf);
        std::vector<uint8_t> bytes(c.data, c.data + c.nbytes);
        if (c.layout == WeightLayout::kRows16) {
          ++packed;
          EXPECT_TRUE(cpuq::packs_rows16(c.type, isa));
          EXPECT_NE(bytes, std::vector<uint8_t>(o.data, o.data + o.nbytes));
          cpuq::unpack_rows16(c, bytes.data());
        }
        EXPECT_EQ(bytes, std::vector<uint8_t>(o.data, o.data + o.nbytes));
      }
      EXPECT_EQ(packed, copy.packed_matrices());
      // Every matrix of these models has rows in groups of 16, experts included.
      if (cpuq::packs_rows16(type, isa)) {
        EXPECT_GT(packed, 0u);
      } else {
        EXPECT_EQ(packed, 0u);
      }
      const CpuWeights unpacked(m.model(), true, false, isa);
      EXPECT_EQ(unpacked.packed_matrices(), 0u);
      const CpuWeights mapped(m.model(), false, true, isa);
      EXPECT_FALSE(mapped.residence().copied);
      EXPECT_EQ(mapped.weights().layers[0].wq.data, m.model().weights().layers[0].wq.data);
    }
  }
}

// Packed matrices give the bits of the GGUF layout's kernels, in one prefill step and one token a
// step, for a dense and an expert model.
TEST(CpuQuantized, PackedAndGgufLayoutsGiveIdenticalLogits) {
  if (!cpuq::packs_rows16(GgmlType::kQ4_0, cpuq::active_isa())) {
    GTEST_SKIP() << "the " << cpuq::isa_name(cpuq::active_isa()) << " level reads no matrix packed";
  }
  std::vector<int32_t> prompt = kPrompt;
  for (int32_t i = 0; prompt.size() < 40; ++i) prompt.push_back(100 + 7 * i);
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ8_0}) {
    for (const char* preset : {"tiny", "tiny-moe"}) {
      TempModel m(type, preset);
      for (size_t chunk : {1u << 20, 1u, 3u, 17u}) {
        size_t packed = 0, unpacked = 1;
        const std::vector<float> want = runner_logits(m.model(), chunk, prompt, false, &unpacked);
        const std::vector<float> got = runner_logits(m.model(), chunk, prompt, true, &packed);
        EXPECT_EQ(unpacked, 0u);
        EXPECT_GT(packed, 0u);
        ASSERT_EQ(want.size(), 512u);
        EXPECT_EQ(got, want) << ggml_type_name(type) << " " << preset << " steps of " << chunk;
      }
    }
  }
}

TEST(CpuQuantized, LogitsStayCloseToF32) {
  TempModel f32(GgmlType::kF32);
  const std::vector<float> want = model_logits(f32.model());
  const struct {
    GgmlType type;
    double tolerance;
  } cases[] = {{GgmlType::kF16, 0.005}, {GgmlType::kBF16, 0.05}, {GgmlType::kQ8_0, 0.05}, {GgmlType::kQ4_0, 0.5}};
  for (const auto& c : cases) {
    TempModel m(c.type);
    const double err = relative_error(model_logits(m.model()), want);
    EXPECT_LT(err, c.tolerance) << ggml_type_name(c.type);
    std::printf("%s: relative L2 error of logits vs f32 = %.5f\n", std::string(ggml_type_name(c.type)).c_str(), err);
  }
}

}  // namespace
}  // namespace vks
