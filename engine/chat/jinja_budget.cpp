#include "engine/chat/jinja_budget.h"

#include <algorithm>
#include <string>

#include "engine/chat/jinja_error.h"
#include "engine/chat/jinja_template.h"

namespace vks::jinja {
namespace {

thread_local RenderBudget* t_budget = nullptr;
thread_local RenderScope* t_scope = nullptr;
thread_local bool t_uncharged = false;

// Reading the clock on every step would cost more than the step; every few thousand steps a
// render notices its deadline or cancel within microseconds.
constexpr uint64_t kClockEverySteps = 4096;
// Allocations also read the clock, every this many bytes, so a render that copies much in few
// steps is still timed.
constexpr uint64_t kClockEveryBytes = uint64_t{1} << 20;

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits)
    : max_alloc_bytes_(limits.max_alloc_bytes),
      max_steps_(limits.max_steps),
      max_string_bytes_(limits.max_output_bytes),
      deadline_(std::chrono::steady_clock::now() + limits.max_duration),
      max_duration_(limits.max_duration),
      cancelled_(limits.cancelled),
      scope_cancelled_(t_scope != nullptr ? t_scope->cancelled() : nullptr) {
  // The enclosing scope's deadline, when sooner, is this render's (the scope's total is what the
  // error then names).
  if (t_scope != nullptr && t_scope->deadline() < deadline_) {
    deadline_ = t_scope->deadline();
    max_duration_ = t_scope->total();
  }
}

void RenderBudget::charge_bytes(size_t bytes) {
  allocated_ += bytes;
  if (allocated_ > max_alloc_bytes_) {
    throw EvalError("template exceeded its memory limit (" + mib(max_alloc_bytes_) + " allocated)");
  }
  bytes_since_clock_ += bytes;
  if (bytes_since_clock_ >= kClockEveryBytes) check_clock();
}

void RenderBudget::ensure_room(size_t bytes) const {
  if (bytes > max_alloc_bytes_ - std::min(allocated_, max_alloc_bytes_)) {
    throw EvalError("template exceeded its memory limit (" + mib(max_alloc_bytes_) + " allocated)");
  }
}

void RenderBudget::charge_steps(size_t steps) {
  steps_ += steps;
  if (steps_ > max_steps_) throw EvalError("template exceeded its step limit (endless loop?)");
  if (steps_ >= next_clock_check_) check_clock();
}

void RenderBudget::check_string(size_t size) const {
  if (size > max_string_bytes_) throw EvalError("value exceeds the template size limit");
}

void RenderBudget::check_clock() {
  next_clock_check_ = steps_ + kClockEverySteps;
  bytes_since_clock_ = 0;
  const auto is_set = [](const std::atomic<bool>* flag) { return flag != nullptr && flag->load(std::memory_order_relaxed); };
  if (is_set(cancelled_) || is_set(scope_cancelled_)) {
    throw EvalError("template render cancelled (the request is gone)");
  }
  if (std::chrono::steady_clock::now() > deadline_) {
    throw EvalError("template exceeded its time limit (" + std::to_string(max_duration_.count()) + " ms)");
  }
}

BudgetScope::BudgetScope(RenderBudget& budget) : previous_(t_budget) { t_budget = &budget; }
BudgetScope::~BudgetScope() { t_budget = previous_; }

RenderScope::RenderScope(std::chrono::milliseconds total, const std::atomic<bool>* cancelled)
    : previous_(t_scope),
      deadline_(std::chrono::steady_clock::now() + total),
      total_(total),
      cancelled_(cancelled) {
  if (previous_ != nullptr) {
    if (previous_->deadline_ < deadline_) {
      deadline_ = previous_->deadline_;
      total_ = previous_->total_;
    }
    if (cancelled_ == nullptr) cancelled_ = previous_->cancelled_;
  }
  t_scope = this;
}
RenderScope::~RenderScope() { t_scope = previous_; }

bool render_scope_spent() {
  if (t_scope == nullptr) return false;
  if (t_scope->cancelled() != nullptr && t_scope->cancelled()->load(std::memory_order_relaxed)) return true;
  return std::chrono::steady_clock::now() >= t_scope->deadline();
}

UnchargedScope::UnchargedScope() : previous_(t_uncharged) { t_uncharged = true; }
UnchargedScope::~UnchargedScope() { t_uncharged = previous_; }

namespace budget {
void charge_bytes(size_t bytes) {
  if (t_budget != nullptr && !t_uncharged) t_budget->charge_bytes(bytes);
}
void ensure_room(size_t bytes) {
  if (t_budget != nullptr) t_budget->ensure_room(bytes);
}
void charge_steps(size_t steps) {
  if (t_budget != nullptr) t_budget->charge_steps(steps);
}
void check_string(size_t size) {
  if (t_budget != nullptr) t_budget->check_string(size);
}
}  // namespace budget

}  // namespace vks::jinja
