#include "server/draft_model.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/model/servable_model.h"
#include "engine/vulkan/runner/runner_factory.h"

namespace vks::server {

void check_draft_vocabulary(const Tokenizer& model, const std::string& model_path, const Tokenizer& draft,
                            const std::string& draft_path) {
  const std::string cannot = "--draft-model " + draft_path + " cannot draft for --model " + model_path + ": ";
  if (draft.vocab_size() != model.vocab_size()) {
    throw Error(ErrorCode::kInvalidArgument, cannot + "its vocabulary has " + std::to_string(draft.vocab_size()) +
                                                 " tokens, the model's " + std::to_string(model.vocab_size()) +
                                                 " (a draft model needs the same vocabulary)");
  }
  for (TokenId id = 0; id < model.vocab_size(); ++id) {
    if (draft.token_text(id) != model.token_text(id)) {
      throw Error(ErrorCode::kInvalidArgument, cannot + "token " + std::to_string(id) + " is \"" +
                                                   std::string(draft.token_text(id)) + "\" in it but \"" +
                                                   std::string(model.token_text(id)) +
                                                   "\" in the model (a draft model needs the same vocabulary)");
    }
  }
}

std::unique_ptr<ModelRunner> load_draft_runner(const std::string& draft_path, RunnerOptions ro, int32_t slots,
                                               const std::string& model_path, const Tokenizer& model_tokenizer,
                                               std::unique_ptr<LlamaModel>& draft_model) {
  ServableModel draft;
  try {
    draft = load_servable_model(draft_path);
  } catch (const Error& e) {
    throw Error(e.code(), "cannot load --draft-model " + draft_path + ": " + e.what());
  }
  check_draft_vocabulary(model_tokenizer, model_path, *draft.tokenizer, draft_path);
  draft_model = std::move(draft.model);
  const int32_t slot_tokens = std::min<int32_t>(static_cast<int32_t>(draft_model->config().context_length),
                                                kMaxDraftSlotTokens);
  ro.num_blocks = std::max(1, slots) * ((slot_tokens + ro.block_size - 1) / ro.block_size);
  ro.num_window_blocks = 0;  // the drafter's slots are block ranges of one pool
  return make_runner(*draft_model, ro);
}

}  // namespace vks::server
