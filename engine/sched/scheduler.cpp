#include "engine/sched/scheduler.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "engine/common/error.h"

namespace vks::sched {

Scheduler::Scheduler(SchedulerConfig config, BlockManager& blocks, BlockManager* window_blocks)
    : config_(config),
      blocks_(blocks),
      window_(config.kv_window > 0 ? window_blocks : nullptr),
      checkpoints_(config.state_slots, config.state_slots > 0 && blocks.prefix_caching() ? config.state_checkpoints : 0) {
  if (config_.max_seqs <= 0 || config_.max_batched_tokens < config_.max_seqs) {
    throw Error(ErrorCode::kInvalidArgument, "scheduler needs max_seqs > 0 and max_batched_tokens >= max_seqs");
  }
  if (!(config_.aging_ms > 0)) throw Error(ErrorCode::kInvalidArgument, "scheduler aging_ms must be > 0");
  if (config_.kv_window > 0 && (window_ == nullptr || window_->block_size() != blocks_.block_size() ||
                                 window_->prefix_caching() != blocks_.prefix_caching() || config_.state_slots > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "a scheduler window pool needs its own block manager of the same block "
                                             "size and prefix caching, and a model without recurrent state");
  }
  for (int32_t slot = config_.state_slots - 1; slot >= 0; --slot) free_state_slots_.push_back(slot);
}

void Scheduler::release_state_slot(Sequence* seq) {
  if (seq->state_slot < 0) return;
  free_state_slots_.push_back(seq->state_slot);
  std::sort(free_state_slots_.begin(), free_state_slots_.end(), std::greater<>());
  seq->state_slot = -1;
}

int32_t Scheduler::cut_to_checkpoint(PrefixMatch& match) {
  size_t keep = match.blocks.size();
  int32_t slot = -1;
  while (keep > 0 && (slot = checkpoints_.find(match.hashes[keep - 1])) < 0) --keep;
  blocks_.cut_match(match, keep);
  return slot;
}

size_t Scheduler::first_window_block(int32_t pos) const {
  return static_cast<size_t>(std::max(0, pos - (config_.kv_window - 1)) / blocks_.block_size());
}

PrefixMatch Scheduler::cut_to_window(PrefixMatch& match, const Sequence* s) const {
  PrefixMatch window_match;
  size_t n = match.blocks.size();
  while (n > 0) {
    size_t missing = 0;
    const int32_t boundary = static_cast<int32_t>(n) * blocks_.block_size();
    if (window_->match_window(match, s->tokens, first_window_block(boundary), n, window_match, missing)) break;
    n = missing;  // every deeper boundary's window holds the missing block too
  }
  blocks_.cut_match(match, n);
  if (n == 0) window_match = PrefixMatch{};
  return window_match;
}

int32_t Scheduler::room(const Sequence* s) const {
  const int32_t bs = blocks_.block_size();
  int32_t r = (static_cast<int32_t>(s->kv.blocks.size()) + blocks_.num_free()) * bs - s->num_computed;
  if (window_) {
    r = std::min(r, (static_cast<int32_t>(s->window_kv.blocks.size()) + window_->num_free()) * bs - s->num_computed);
  }
  return r;
}

bool Scheduler::grow(Sequence* s, int32_t n_tokens) {
  // Checked first so that a pool that is short leaves the other untouched.
  const int32_t n = static_cast<int32_t>(s->kv.blocks.size());
  if (blocks_.blocks_needed(n, n_tokens) > blocks_.num_free()) return false;
  if (window_ && window_->blocks_needed(static_cast<int32_t>(s->window_kv.blocks.size()), n_tokens) > window_->num_free()) {
    return false;
  }
  return blocks_.grow(s->kv, n_tokens) && (!window_ || window_->grow(s->window_kv, n_tokens));
}

void Scheduler::release_blocks(Sequence* s) {
  blocks_.release(s->kv);
  if (window_) window_->release(s->window_kv);
}

void Scheduler::commit(Sequence* s) {
  blocks_.commit(s->kv, s->tokens, s->num_computed);
  if (!window_) return;
  window_->commit(s->window_kv, s->tokens, s->num_computed);
  window_->release_before(s->window_kv, first_window_block(s->num_computed));
}

int32_t Scheduler::prompt_boundary(const Sequence* s) const {
  const int32_t bs = blocks_.block_size();
  return std::max(0, s->num_prompt_tokens - 1) / bs * bs;
}

int32_t Scheduler::stop_at_prompt_boundary(const Sequence* s, int32_t n) const {
  if (!checkpoints_.enabled()) return n;
  const int32_t b = prompt_boundary(s);
  return s->num_computed < b && s->num_computed + n > b ? b - s->num_computed : n;
}

void Scheduler::checkpoint(Sequence* s) {
  const int32_t bs = blocks_.block_size();
  const int32_t at = s->num_computed;
  if (at == 0 || at % bs != 0 || (at != prompt_boundary(s) && at < s->num_prompt_tokens)) return;
  const auto block = static_cast<size_t>(at / bs - 1);
  if (block >= s->kv.hashes.size()) return;
  const uint64_t hash = s->kv.hashes[block];
  // Decoding: this replaces the checkpoint of the previous boundary, if that one was a decode's too.
  if (at - bs >= s->num_prompt_tokens) checkpoints_.drop(s->kv.hashes[block - 1]);
  if (const int32_t slot = checkpoints_.take(hash); slot >= 0) pending_saves_.push_back({s->state_slot, slot});
}

void Scheduler::add(Sequence* seq, Clock::time_point now) {
  seq->state = SeqState::kWaiting;
  if (seq->submitted_at == Clock::time_point{}) seq->submitted_at = now;
  waiting_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) waiting_.erase(it);
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) running_.erase(it);
  release_blocks(seq);
  release_state_slot(seq);
  seq->state = SeqState::kFinished;
}

bool Scheduler::more_important(const Sequence* a, const Sequence* b, Clock::time_point now, bool waiting) const {
  if (config_.priority_policy) {
    double pa = a->priority, pb = b->priority;
    if (waiting) {
      pa += std::chrono::duration<double, std::milli>(now - a->submitted_at).count() / config_.aging_ms;
      pb += std::chrono::duration<double, std::milli>(now - b->submitted_at).count() / config_.aging_ms;
    }
    if (pa != pb) return pa > pb;
  }
  return a->arrival < b->arrival;
}

std::vector<Sequence*> Scheduler::waiting_in_order(Clock::time_point now) const {
  std::vector<Sequence*> order(waiting_.begin(), waiting_.end());
  if (config_.priority_policy) {
    std::stable_sort(order.begin(), order.end(),
                     [&](const Sequence* a, const Sequence* b) { return more_important(a, b, now, true); });
  }
  return order;  // FCFS: the queue order itself (preempted sequences were put at the front)
}

int32_t Scheduler::waiting_position(const Sequence* seq, Clock::time_point now) const {
  const auto order = waiting_in_order(now);
  auto it = std::find(order.begin(), order.end(), seq);
  return it == order.end() ? -1 : static_cast<int32_t>(it - order.begin());
}

Sequence* Scheduler::pick_victim(const std::vector<Sequence*>& unscheduled) const {
  Sequence* victim = nullptr;
  for (Sequence* s : unscheduled) {
    if (s->state != SeqState::kRunning) continue;
    if (!victim || more_important(victim, s, Clock::time_point{}, false)) victim = s;
  }
  return victim;
}

void Scheduler::preempt(Sequence* victim, Clock::time_point, SchedulerOutput& out) {
  release_blocks(victim);
  release_state_slot(victim);  // its state is recomputed from its tokens, like its KV
  victim->num_computed = 0;
  victim->draft.clear();
  victim->state = SeqState::kWaiting;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  waiting_.push_front(victim);
  ++victim->num_preemptions;
  ++num_preemptions_;
  out.preempted.push_back(victim);
}

SchedulerOutput Scheduler::schedule(Clock::time_point now) {
  SchedulerOutput out = schedule_chunks(now);
  if (!out.empty() && !pending_saves_.empty()) {  // saves first: a restore may read what one writes
    out.state_copies.insert(out.state_copies.begin(), pending_saves_.begin(), pending_saves_.end());
    pending_saves_.clear();
  }
  return out;
}

SchedulerOutput Scheduler::schedule_chunks(Clock::time_point now) {
  SchedulerOutput out;
  int32_t budget = config_.max_batched_tokens;
  std::vector<Sequence*> order = running_;
  std::stable_sort(order.begin(), order.end(),
                   [&](const Sequence* a, const Sequence* b) { return more_important(a, b, now, false); });
  std::unordered_set<const Sequence*> scheduled;
  auto unscheduled = [&] {
    std::vector<Sequence*> v;
    for (Sequence* s : running_) if (!scheduled.count(s)) v.push_back(s);
    return v;
  };
  int32_t draft_left = config_.max_draft_tokens;
  auto add_chunk = [&](Sequence* s, int32_t n, int32_t n_draft) {
    out.chunks.push_back(ScheduledChunk{s, s->num_computed, n, n_draft});
    out.num_tokens += n;
    budget -= n;
    scheduled.insert(s);
  };
  // Gets room for s to hold `want` more tokens, shrinking to what fits or preempting the least
  // important unscheduled sequence; returns the tokens granted (0: s itself was preempted).
  auto reserve = [&](Sequence* s, int32_t want) -> int32_t {
    while (true) {
      const int32_t n = std::min(want, room(s));
      if (n > 0 && grow(s, s->num_computed + n)) return n;
      Sequence* victim = pick_victim(unscheduled());
      if (!victim) return 0;
      preempt(victim, now, out);
      if (victim == s) return 0;
    }
  };

  // 1. One decode token for every running sequence that is decoding, and what fits of its draft.
  for (Sequence* s : order) {
    if (budget <= 0) break;
    if (s->state != SeqState::kRunning || !s->is_decoding()) continue;
    const int32_t want_draft = std::min({static_cast<int32_t>(s->draft.size()), draft_left, budget - 1});
    const int32_t n = reserve(s, 1 + want_draft);
    if (n < 1) continue;
    s->draft.resize(static_cast<size_t>(n - 1));
    draft_left -= n - 1;
    add_chunk(s, n, n - 1);
  }
  // 2. Prefill chunks of running sequences still prefilling (or recomputing).
  for (Sequence* s : order) {
    if (budget <= 0) break;
    if (s->state != SeqState::kRunning || scheduled.count(s) || s->num_uncomputed() <= 0) continue;
    s->draft.clear();  // only a decode verifies a draft
    const int32_t n = reserve(s, stop_at_prompt_boundary(s, std::min(s->num_uncomputed(), budget)));
    if (n > 0) add_chunk(s, n, 0);
  }
  // 3. Admissions, unless this step had to preempt (the freed blocks are for the running ones).
  if (!out.preempted.empty()) return out;
  for (Sequence* s : waiting_in_order(now)) {
    if (budget <= 0 || static_cast<int32_t>(running_.size()) >= config_.max_seqs) break;
    if (config_.state_slots > 0 && free_state_slots_.empty()) break;
    PrefixMatch match = s->use_prefix_cache ? blocks_.match_prefix(s->tokens) : PrefixMatch{};
    const PrefixMatch window_match = window_ ? cut_to_window(match, s) : PrefixMatch{};
    const int32_t resume_from = config_.state_slots > 0 ? cut_to_checkpoint(match) : -1;
    const int32_t bs = blocks_.block_size();
    const int32_t cached = static_cast<int32_t>(match.blocks.size()) * bs;
    const int32_t free_after = blocks_.num_free() - match.evictable;
    int32_t fits = (static_cast<int32_t>(match.blocks.size()) + free_after) * bs - cached;
    if (window_) {
      const int32_t window_free = window_->num_free() - window_match.evictable;
      fits = std::min(fits, (static_cast<int32_t>(window_match.blocks.size()) + window_free) * bs - cached);
    }
    if (fits <= 0 || budget <= 0) break;  // head of line waits for blocks: later ones must not overtake it
    s->num_computed = cached;
    const int32_t n = stop_at_prompt_boundary(s, std::min({s->num_tokens() - cached, budget, fits}));
    blocks_.acquire_prefix(s->kv, match);
    if (window_) window_->acquire_prefix(s->window_kv, window_match);
    if (!grow(s, cached + n)) throw Error(ErrorCode::kInternal, "block pool accounting mismatch");
    if (config_.state_slots > 0) {
      s->state_slot = free_state_slots_.back();
      free_state_slots_.pop_back();
      if (resume_from >= 0) out.state_copies.push_back({resume_from, s->state_slot});
    }
    if (!s->admitted_before) {
      s->admitted_before = true;
      s->num_cached_prompt = std::min(cached, s->num_prompt_tokens);
      if (s->use_prefix_cache) blocks_.record_lookup(s->num_tokens(), cached);
    }
    s->state = SeqState::kRunning;
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), s));
    running_.push_back(s);
    out.admitted.push_back(s);
    s->draft.clear();
    add_chunk(s, n, 0);
  }
  return out;
}

void Scheduler::on_step_done(const SchedulerOutput& out) {
  for (const ScheduledChunk& c : out.chunks) {
    Sequence* s = c.seq;
    if (s->state != SeqState::kRunning) continue;
    s->num_computed = c.n_past + c.n_tokens - c.n_draft;
    commit(s);
    if (checkpoints_.enabled() && s->state_slot >= 0) checkpoint(s);
  }
}

void Scheduler::on_draft_verified(Sequence* seq, int32_t accepted) {
  if (seq->state != SeqState::kRunning) return;
  seq->num_computed += accepted;
  if (seq->num_computed > seq->num_tokens()) throw Error(ErrorCode::kInternal, "more draft tokens accepted than appended");
  blocks_.shrink(seq->kv, seq->num_tokens());
  if (window_) window_->shrink(seq->window_kv, seq->num_tokens());
  commit(seq);
  seq->draft.clear();
}

}  // namespace vks::sched
