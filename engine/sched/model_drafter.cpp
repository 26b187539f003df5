#include "engine/sched/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

namespace vks::sched {

std::unique_ptr<Drafter> make_model_drafter(std::unique_ptr<ModelRunner> runner, int32_t slots) {
  return std::make_unique<ModelDrafter>(std::move(runner), slots);
}

ModelDrafter::ModelDrafter(std::unique_ptr<ModelRunner> runner, int32_t slots) : runner_(std::move(runner)) {
  const int32_t blocks = runner_->num_blocks();
  const int32_t n = std::max(1, std::min(slots, blocks));
  const int32_t per_slot = blocks / n;
  slot_tokens_ = std::min(per_slot * runner_->block_size(), static_cast<int32_t>(runner_->config().context_length));
  slots_.resize(static_cast<size_t>(n));
  for (int32_t s = 0; s < n; ++s) {
    for (int32_t b = 0; b < per_slot; ++b) slots_[static_cast<size_t>(s)].blocks.push_back(s * per_slot + b);
  }
}

ModelDrafter::Slot* ModelDrafter::slot_for(const Sequence* seq) {
  Slot* oldest = nullptr;
  for (Slot& s : slots_) {
    if (s.seq == seq) {
      s.last_used = clock_;
      return &s;
    }
    if (s.last_used < clock_ && (!oldest || s.last_used < oldest->last_used)) oldest = &s;
  }
  if (!oldest) return nullptr;  // every slot drafts for another sequence this step
  oldest->seq = seq;  // its K/V stay: a common prefix with this sequence's tokens is still valid
  oldest->last_used = clock_;
  return oldest;
}

size_t ModelDrafter::kept(const Slot& slot, const std::vector<int32_t>& tokens) {
  // The last token is fed again when already held: its logits give the first draft token.
  const size_t most = std::min(slot.fed.size(), tokens.size() - 1);
  return static_cast<size_t>(std::mismatch(slot.fed.begin(), slot.fed.begin() + static_cast<std::ptrdiff_t>(most),
                                           tokens.begin())
                                 .first -
                             slot.fed.begin());
}

int32_t ModelDrafter::unfed_tokens(const Sequence& seq) const {
  for (const Slot& s : slots_) {
    if (s.seq == &seq && !seq.tokens.empty()) return static_cast<int32_t>(seq.tokens.size() - kept(s, seq.tokens));
  }
  return seq.num_tokens();
}

void ModelDrafter::draft(std::span<const DraftJob> jobs) {
  ++clock_;
  active_.clear();
  last_feed_ = {};
  for (const DraftJob& job : jobs) {
    job.seq->draft.clear();
    const std::vector<int32_t>& tokens = job.seq->tokens;
    const int32_t len = job.seq->num_tokens();
    // Draft token i is the argmax after position len - 1 + i, fed at position len + i - 1 < slot.
    const int32_t max = std::min(job.max, slot_tokens_ - len + 1);
    if (max <= 0 || len == 0) continue;
    Slot* slot = slot_for(job.seq);
    if (!slot) continue;
    slot->fed.resize(kept(*slot, tokens));
    // What catch_up() feeds it: the tokens past those.
    const auto unfed = static_cast<int64_t>(tokens.size() - slot->fed.size());
    last_feed_.tokens += unfed;
    last_feed_.most_for_one = std::max(last_feed_.most_for_one, unfed);
    active_.push_back({&job, slot, max});
  }
  if (active_.empty()) return;
  try {
    const auto start = std::chrono::steady_clock::now();
    catch_up();
    last_feed_.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (int32_t i = 1;; ++i) {  // one batched step per further draft token
      bool any = false;
      for (Active& a : active_) {
        std::vector<int32_t>& d = a.job->seq->draft;
        if (static_cast<int32_t>(d.size()) != i || i >= a.max) continue;
        if (static_cast<int32_t>(batch_.seqs.size()) == runner_->max_step_seqs() ||
            static_cast<int32_t>(batch_.tokens.size()) == runner_->max_step_tokens()) {
          run_batch();
        }
        const int32_t last = d.back();
        add_chunk(a, std::span<const int32_t>(&last, 1), true);
        any = true;
      }
      if (!any) break;
      run_batch();
    }
  } catch (const std::exception&) {
    // A failed draft step costs this step its drafts, nothing else; the slots' contents are unknown.
    for (const DraftJob& job : jobs) job.seq->draft.clear();
    for (Slot& s : slots_) s.fed.clear();
    clear_batch();
    last_feed_ = {};  // a partial feed's time is no price of feeding
  }
}

void ModelDrafter::catch_up() {
  const auto max_tokens = static_cast<size_t>(runner_->max_step_tokens());
  const auto max_seqs = static_cast<size_t>(runner_->max_step_seqs());
  for (bool pending = true; pending;) {
    pending = false;
    for (Active& a : active_) {
      const std::vector<int32_t>& tokens = a.job->seq->tokens;
      const size_t from = a.slot->fed.size();
      if (from == tokens.size()) continue;
      if (batch_.seqs.size() == max_seqs || batch_.tokens.size() == max_tokens) {
        pending = true;  // in the next batch
        continue;
      }
      const size_t n = std::min(tokens.size() - from, max_tokens - batch_.tokens.size());
      add_chunk(a, std::span<const int32_t>(tokens.data() + from, n), from + n == tokens.size());
      pending |= from + n < tokens.size();
    }
    run_batch();
  }
}

void ModelDrafter::add_chunk(Active& a, std::span<const int32_t> tokens, bool output) {
  SeqChunk& c = batch_.seqs.emplace_back();
  c.token_offset = static_cast<int32_t>(batch_.tokens.size());
  c.n_tokens = static_cast<int32_t>(tokens.size());
  c.n_past = static_cast<int32_t>(a.slot->fed.size());
  if (!spare_tables_.empty()) {
    c.block_table = std::move(spare_tables_.back());
    spare_tables_.pop_back();
  }
  c.block_table.assign(a.slot->blocks.begin(), a.slot->blocks.end());
  // A constrained job's rows come back whole: its pick is among the tokens its grammar allows.
  c.logits = !output ? LogitsMode::kNone : a.job->grammar != nullptr ? LogitsMode::kFull : LogitsMode::kArgmax;
  batch_.tokens.insert(batch_.tokens.end(), tokens.begin(), tokens.end());
  a.slot->fed.insert(a.slot->fed.end(), tokens.begin(), tokens.end());
  owners_.push_back(output ? &a : nullptr);
}

void ModelDrafter::run_batch() {
  if (batch_.seqs.empty()) return;
  batch_.finalize(runner_->block_size());
  runner_->step(batch_, result_);
  const auto vocab = static_cast<int32_t>(runner_->config().vocab_size);
  size_t full_rows = 0;  // kFull rows before this chunk's (one per kFull chunk: none verifies)
  for (size_t s = 0; s < owners_.size(); ++s) {
    const bool full = batch_.seqs[s].logits == LogitsMode::kFull;
    const size_t row = full ? full_rows++ : 0;
    if (!owners_[s]) continue;
    const int32_t id =
        full ? constrained_pick(*owners_[s]->job, std::span<float>(result_.logits)
                                                      .subspan(row * static_cast<size_t>(vocab), static_cast<size_t>(vocab)))
             : result_.argmax[s];
    // An id outside the vocabulary would fail the target's step: that sequence drafts no further.
    if (id >= 0 && id < vocab) {
      owners_[s]->job->seq->draft.push_back(id);
    } else {
      owners_[s]->max = 0;
    }
  }
  clear_batch();
}

int32_t ModelDrafter::constrained_pick(const DraftJob& job, std::span<float> logits) {
  if (job.grammar->apply(logits) == 0) return -1;
  const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  return job.grammar->accept(best) ? best : -1;
}

void ModelDrafter::clear_batch() {
  for (SeqChunk& c : batch_.seqs) spare_tables_.push_back(std::move(c.block_table));
  batch_.tokens.clear();
  batch_.seqs.clear();
  owners_.clear();
}

}  // namespace vks::sched
