#include "engine/grammar/token_constraint.h"

#include <algorithm>
#include <limits>

namespace vks::grammar {

TokenConstraint::TokenConstraint(std::shared_ptr<GrammarTable> table) : table_(std::move(table)) {
  table_->start(ref_, state_);
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenIndex> index)
    : TokenConstraint(std::make_shared<GrammarTable>(std::move(grammar), std::move(index))) {}

const TokenMask& TokenConstraint::allowed() {
  if (!mask_) mask_ = table_->mask(ref_, state_);
  return *mask_;
}

size_t TokenConstraint::apply(std::span<float> logits) {
  const TokenMask& m = allowed();
  size_t kept = 0;
  const size_t n = std::min(logits.size(), static_cast<size_t>(table_->index().vocab_size()));
  for (size_t i = 0; i < n; ++i) {
    if ((m[i >> 6] >> (i & 63)) & 1u) {
      ++kept;
    } else {
      logits[i] = -std::numeric_limits<float>::infinity();
    }
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
  return kept;
}

bool TokenConstraint::accept(TokenId id) {
  const TokenIndex& index = table_->index();
  if (id < 0 || id >= index.vocab_size()) return false;
  if (index.is_end(id)) return can_end();
  const std::string& bytes = index.bytes(id);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool TokenConstraint::accept_bytes(std::string_view bytes) {
  if (!table_->advance(ref_, state_, bytes)) return false;
  mask_.reset();
  return true;
}

}  // namespace vks::grammar
