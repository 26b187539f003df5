#pragma once
// Runs CPU-heavy request work (tokenizing a long prompt, detokenizing many ids) on libuv's thread
// pool so that the socket loop keeps serving every other client, while each client still gets its
// answers in request order: while a client has work in flight, its later requests are deferred and
// handled, in arrival order, once that work's completion has run on the loop thread.
// Work whose cost the client chooses (rendering a chat template it sent) may hold only part of the
// pool, and work of a client that went away is told to stop (a cancel flag it reads).
// Loop-thread only (except the work functions); exceptions never cross the thread boundary.
#include <uv.h>

#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace vks::server {

// Texts shorter than this are tokenized on the loop thread (generate, chat, embed, tokenize; Unix
// socket, ZeroMQ and HTTP alike): a pool round trip costs more than the work, 1 KiB taking
// 0.03-0.2 ms at the tokenizers' measured 5-37 MB/s (bench/tokenizer_bench).
inline constexpr size_t kOffLoopMinTextBytes = 1024;

// The message of a work's (or any thread's) exception, for an error answer.
std::string what_of(const std::exception_ptr& error);

class OffLoop {
 public:
  using Work = std::function<void()>;                    // pool thread; may throw
  using Done = std::function<void(std::exception_ptr)>;  // loop thread; null = the work succeeded
  using Later = std::function<void()>;                   // loop thread: a deferred request
  // Set (on the loop thread) when the work's client went away; the work reads it and stops early.
  using CancelFlag = std::shared_ptr<std::atomic<bool>>;

  // Who chooses what a piece of work costs.
  enum class Cost {
    kBounded,       // bounded by the request's size (tokenizing, compiling a grammar): any pool thread
    kClientChosen,  // chosen by the client (its own chat template: up to its render bounds)
  };

  // libuv's pool size (UV_THREADPOOL_SIZE, 4 by default), which client-chosen work may half fill.
  OffLoop();
  ~OffLoop();  // work still waiting for a thread is dropped (the loop is going away)
  OffLoop(const OffLoop&) = delete;
  OffLoop& operator=(const OffLoop&) = delete;

  // Queues `work` for client `key`; `done` runs on the loop thread afterwards with the work's
  // exception (or an Error(kInternal) if libuv could not queue it), then the client's deferred
  // requests run until one of them starts new work. `loop` must outlive the work.
  // `cancel`, when given, is set by forget(key). Client-chosen work holds at most
  // max_client_chosen() pool threads at once; the rest waits here in arrival order, so that slow
  // renders of some clients never keep every other client's tokenizing and rendering waiting.
  void run(uv_loop_t* loop, const std::string& key, Work work, Done done, CancelFlag cancel = nullptr,
           Cost cost = Cost::kBounded);

  // Whether `key` has work in flight: a request of that client must then go to defer().
  bool busy(const std::string& key) const;
  // Work of `key` that runs elsewhere (a model load on its own thread): its later requests are
  // deferred from hold() until the matching release() on the loop thread, which then runs them as
  // a completion would.
  void hold(const std::string& key);
  void release(const std::string& key);
  void defer(const std::string& key, Later later);
  // The client went away: its deferred requests are dropped and the cancel flags of its work in
  // flight are set (work still completes, early when it reads its flag; `done` still runs).
  void forget(const std::string& key);
  // The daemon is closing (the engine is about to go): work not started yet is not run (its `done`
  // gets Error(kCancelled)), and every client's cancel flags are set, so running renders stop.
  void stop();

  size_t in_flight() const { return in_flight_; }
  size_t max_client_chosen() const { return max_client_chosen_; }
  size_t client_chosen_waiting() const { return waiting_.size(); }

 private:
  struct Task;
  struct Client {
    int32_t busy = 0;  // work in flight (run() and hold())
    std::deque<Later> deferred;
    std::vector<CancelFlag> cancels;  // of its work in flight
  };
  void start(std::unique_ptr<Task> task);
  static void on_work(uv_work_t* req);
  static void on_after_work(uv_work_t* req, int status);
  void finish(const std::string& key);

  std::unordered_map<std::string, Client> clients_;
  size_t in_flight_ = 0;
  size_t max_client_chosen_;
  size_t client_chosen_running_ = 0;
  std::deque<std::unique_ptr<Task>> waiting_;  // client-chosen work not started yet
  std::atomic<bool> stopped_{false};            // read by pool threads (on_work)
};

}  // namespace vks::server
