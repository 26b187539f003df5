// libFuzzer target for the GGUF reader and the llama model validation behind it. Built as a real
// libFuzzer binary with -DVKS_LIBFUZZER=ON (clang), and driven by fuzz_gguf_driver_test otherwise.
// Any input must either parse or throw vks::Error; everything a parsed file exposes is touched.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"

namespace {

void touch_metadata(const vks::gguf::GgufFile& f) {
  for (const vks::gguf::KeyValue& kv : f.metadata()) {
    try { (void)f.get_int(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_float(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_string(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_bool(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_string_array(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_float_array(kv.key); } catch (const vks::Error&) {}
    try { (void)f.get_int_array(kv.key); } catch (const vks::Error&) {}
  }
}

uint32_t touch_tensors(const vks::gguf::GgufFile& f) {
  uint32_t sum = 0;
  for (const vks::gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> data = f.tensor_data(t);
    if (!data.empty()) sum += data.front() + data.back();
    if (f.find_tensor(t.name) != &t) sum += 1;
  }
  return sum;
}

void touch_model(vks::gguf::GgufFile f) {
  const auto model = vks::LlamaModel::from_file(std::move(f));
  const vks::LlamaWeights& w = model->weights();
  std::vector<vks::TensorRef> refs = {w.token_embd, w.output_norm, w.output};
  for (const vks::LayerWeights& l : w.layers) {
    refs.insert(refs.end(), {l.attn_norm, l.wq, l.wk, l.wv, l.wo, l.ffn_norm, l.w_gate, l.w_up, l.w_down});
    for (const auto* opt : {&l.bq, &l.bk, &l.bv, &l.attn_q_norm, &l.attn_k_norm}) {
      if (*opt) refs.push_back(**opt);
    }
  }
  if (w.rope_freqs) refs.push_back(*w.rope_freqs);
  std::vector<float> row;
  for (const vks::TensorRef& r : refs) {
    row.resize(r.cols);
    vks::dequantize_tensor_row(r, r.rows - 1, row.data());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    vks::gguf::GgufFile f = vks::gguf::GgufFile::parse({data, size});
    touch_metadata(f);
    (void)touch_tensors(f);
    touch_model(std::move(f));
  } catch (const vks::Error&) {
    // Rejecting bad input with vks::Error is the expected outcome.
  }
  return 0;
}
