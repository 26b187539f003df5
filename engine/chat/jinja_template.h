#pragma once
// A small Jinja interpreter for chat templates: parse once, render many times, thread-safe
// rendering (a render owns all of its mutable state).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_error.h"
#include "engine/chat/jinja_value.h"

namespace vks::jinja {

// Bounds on one render, so a hostile template cannot loop, recurse, allocate or take time without
// end. Crossing one throws TemplateError naming it.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;  // also bounds any single string or list built
  // Bytes of every string, list and dict the render builds, counted as allocated (a copy counts
  // again), so a list doubled 64 times or rebuilt quadratically stops here, not in the host's RAM.
  uint64_t max_alloc_bytes = uint64_t{256} << 20;
  uint64_t max_steps = 20'000'000;  // statements + expressions + loop iterations
  int max_call_depth = 64;          // nested macro calls
  // Renders share libuv's 4-thread pool with every client's tokenizing: a slow render may hold a
  // thread this long at most (a real chat template renders in well under a millisecond).
  std::chrono::milliseconds max_duration{2'000};
  // Set by another thread when nobody waits for the result any more (the client left).
  const std::atomic<bool>* cancelled = nullptr;
};

class Template {
 public:
  // Throws TemplateError naming the line of a syntax error.
  static Template parse(std::string_view source);

  // Renders with the given variables. Throws TemplateError naming the line of the failure
  // (unknown filter, type error, raise_exception, a limit exceeded).
  std::string render(const Value::Dict& variables, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace vks::jinja
