#pragma once
// vkstreamd --draft-model: the draft model speculative decoding drafts with must read and write
// the target's token ids, so its vocabulary must be the target's, token for token.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/model_runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vulkan/runner/runner_options.h"

namespace vks::server {

// Throws vks::Error(kInvalidArgument) naming both files and the first difference (the token
// count, or the first token whose text differs).
void check_draft_vocabulary(const Tokenizer& model, const std::string& model_path, const Tokenizer& draft,
                            const std::string& draft_path);

// Loads the draft model at draft_path into `draft_model` (which must outlive the runner), checks
// its vocabulary against the model's and makes its runner with the model's runner options `ro`
// (device, backend, KV types) and a KV pool of its own: `slots` sequences (the engine's max_seqs)
// of up to its context, at most kMaxDraftSlotTokens each. Throws vks::Error naming the file.
inline constexpr int32_t kMaxDraftSlotTokens = 4096;
std::unique_ptr<ModelRunner> load_draft_runner(const std::string& draft_path, RunnerOptions ro, int32_t slots,
                                               const std::string& model_path, const Tokenizer& model_tokenizer,
                                               std::unique_ptr<LlamaModel>& draft_model);

}  // namespace vks::server
