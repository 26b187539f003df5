#pragma once
// Runs CPU-heavy request work (tokenizing a long prompt, detokenizing many ids) on libuv's thread
// pool so that the socket loop keeps serving every other client, while each client still gets its
// answers in request order: while a client has work in flight, its later requests are deferred and
// handled, in arrival order, once that work's completion has run on the loop thread.
// Loop-thread only (except the work functions); exceptions never cross the thread boundary.
#include <uv.h>

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <unordered_map>

namespace vks::server {

// Texts shorter than this are tokenized on the loop thread (generate, chat, embed, tokenize; Unix
// socket, ZeroMQ and HTTP alike): a pool round trip costs more than the work, 1 KiB taking
// 0.03-0.2 ms at the tokenizers' measured 5-37 MB/s (bench/tokenizer_bench).
inline constexpr size_t kOffLoopMinTextBytes = 1024;

class OffLoop {
 public:
  using Work = std::function<void()>;                    // pool thread; may throw
  using Done = std::function<void(std::exception_ptr)>;  // loop thread; null = the work succeeded
  using Later = std::function<void()>;                   // loop thread: a deferred request

  OffLoop() = default;
  OffLoop(const OffLoop&) = delete;
  OffLoop& operator=(const OffLoop&) = delete;

  // Queues `work` for client `key`; `done` runs on the loop thread afterwards with the work's
  // exception (or an Error(kInternal) if libuv could not queue it), then the client's deferred
  // requests run until one of them starts new work. `loop` must outlive the work.
  void run(uv_loop_t* loop, const std::string& key, Work work, Done done);

  // Whether `key` has work in flight: a request of that client must then go to defer().
  bool busy(const std::string& key) const;
  void defer(const std::string& key, Later later);
  // The client went away: its deferred requests are dropped (in-flight work still completes).
  void forget(const std::string& key);

  size_t in_flight() const { return in_flight_; }

 private:
  struct Task;
  struct Client {
    bool busy = false;
    std::deque<Later> deferred;
  };
  static void on_work(uv_work_t* req);
  static void on_after_work(uv_work_t* req, int status);
  void finish(const std::string& key);

  std::unordered_map<std::string, Client> clients_;
  size_t in_flight_ = 0;
};

}  // namespace vks::server
