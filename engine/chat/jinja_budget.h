#pragma once
// The running render's meter: bytes allocated for values, steps, a deadline and a cancel flag.
// Value constructors and printers (jinja_value.cpp) charge it without being handed the evaluator,
// so every string, list and dict a template builds, in builtins too, counts against one render.
// Bytes are counted as allocated, not as live, so copying a list over and over (a quadratic
// build) costs what it costs, and the same bound limits both memory and work.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace vks::jinja {

struct RenderLimits;

class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits);
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // Throw EvalError when a bound is crossed.
  void charge_bytes(size_t bytes);
  void ensure_room(size_t bytes) const;  // would `bytes` more still fit? (checked before building)
  void charge_steps(size_t steps);
  void check_string(size_t size) const;  // one string (or printed value) over the size limit?

  uint64_t steps() const { return steps_; }
  uint64_t allocated() const { return allocated_; }
  size_t max_string_bytes() const { return max_string_bytes_; }

 private:
  void check_clock();

  uint64_t max_alloc_bytes_;
  uint64_t max_steps_;
  size_t max_string_bytes_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds max_duration_;
  const std::atomic<bool>* cancelled_;        // the render's own (RenderLimits)
  const std::atomic<bool>* scope_cancelled_;  // the enclosing RenderScope's
  uint64_t allocated_ = 0;
  uint64_t steps_ = 0;
  uint64_t next_clock_check_ = 0;
  uint64_t bytes_since_clock_ = 0;
};

// Makes `budget` the meter of this thread's render until destroyed (renders do not nest, but the
// previous one is restored anyway).
class BudgetScope {
 public:
  explicit BudgetScope(RenderBudget& budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  RenderBudget* previous_;
};

// Bounds every render this thread runs while alive, on top of each render's own limits: one request
// renders several times (a template of its own is probed for its tool-call syntax, then renders the
// conversation), and a model's template renders sample conversations and probes at load, so the
// time bound must hold for all of them together, not for each. Also carries the cancel flag of the
// request being rendered (set by another thread when its client left). A nested scope keeps the
// earlier deadline and, given no flag of its own, the outer flag.
class RenderScope {
 public:
  RenderScope(std::chrono::milliseconds total, const std::atomic<bool>* cancelled);
  ~RenderScope();
  RenderScope(const RenderScope&) = delete;
  RenderScope& operator=(const RenderScope&) = delete;

  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  std::chrono::milliseconds total() const { return total_; }
  const std::atomic<bool>* cancelled() const { return cancelled_; }

 private:
  RenderScope* previous_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds total_;
  const std::atomic<bool>* cancelled_;
};

// Whether this thread's RenderScope has run out (its deadline passed or its request cancelled):
// what a render under it produced since may be cut short. False outside a scope.
bool render_scope_spent();

// While alive, value constructors do not charge: for the interpreter's own bookkeeping (the
// `loop` object of each iteration), which is freed at once and bounded by steps.
class UnchargedScope {
 public:
  UnchargedScope();
  ~UnchargedScope();
  UnchargedScope(const UnchargedScope&) = delete;
  UnchargedScope& operator=(const UnchargedScope&) = delete;

 private:
  bool previous_;
};

// The current render's meter, or no-ops outside a render.
namespace budget {
void charge_bytes(size_t bytes);
void ensure_room(size_t bytes);
void charge_steps(size_t steps);
void check_string(size_t size);
}  // namespace budget

}  // namespace vks::jinja
