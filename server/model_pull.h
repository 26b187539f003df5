#pragma once
// vkstreamd's pulls (msgpack `pull`, Ollama's POST /api/pull): each runs store::plan_pull and
// store::run_pull — what `vkstream pull` runs — on a thread of its own: a download takes minutes,
// and neither the socket loop nor libuv's pool (which tokenizing and rendering need) may wait for
// it. Progress and the outcome come back to the loop thread through a uv_async handle; exceptions
// are caught on the pull's thread and handed over as an Outcome, none crosses a thread boundary.
// One pull per name at a time: a second request for a name being pulled joins the first (its
// progress from then on, and its outcome). Two names that plan the same file (a URL and its repo
// name) take turns on it: the second waits for the first, then finds the file pulled.
// A failed pull leaves no FILE.part behind, except after a broken transfer or a cancel (shutdown):
// a retry continues those (store::PartialFile::kKeepIfResumable); FILE.part is never listed nor served.
#include <uv.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "store/model_pull.h"

namespace vks::server {

class ModelPuller {
 public:
  struct Progress {
    std::string digest;      // "sha256:<hex>" when the source lists one; "" before the plan or when unknown
    std::string file;        // the cache-relative file, once planned
    uint64_t completed = 0;  // bytes in the cache so far
    uint64_t total = 0;      // 0: not known (yet)
  };
  struct Outcome {
    std::optional<store::PullOutcome> pulled;  // set when it succeeded
    ErrorCode code = ErrorCode::kInternal;     // otherwise: why not
    std::string error;
  };
  using OnProgress = std::function<void(const Progress&)>;  // loop thread
  using OnDone = std::function<void(const Outcome&)>;       // loop thread

  // Pulls go into `cache_dir`.
  ModelPuller(uv_loop_t* loop, std::string cache_dir);
  ~ModelPuller();  // close() if not done yet
  ModelPuller(const ModelPuller&) = delete;
  ModelPuller& operator=(const ModelPuller&) = delete;

  // Pulls `name` (as `vkstream pull` reads it), or joins its pull running already. `progress` (may
  // be null) and `done` run on the loop thread; `done` exactly once, unless close() comes first.
  void pull(const std::string& name, OnProgress progress, OnDone done);
  // Stops every pull and answers its waiters now (kCancelled, `why`): a shutdown closes the
  // connections right after, and a download may take a moment to notice. Their threads end soon
  // (close() joins them); their FILE.part stays for the next pull.
  void cancel_all(const std::string& why);
  // True while a pull writes `path` (a delete must wait).
  bool writing(const std::string& path) const;
  size_t running() const { return jobs_.size(); }
  // Cancels and joins every pull (their outcomes are dropped) and closes the async handle (the
  // loop must run once more to finish closing it).
  void close();

 private:
  struct Job;
  void run(Job& job);  // the pull's thread
  void post();         // any thread: wake the loop
  static void on_async(uv_async_t* async);
  void deliver();      // loop thread

  std::string cache_dir_;
  uv_async_t async_{};
  bool open_ = false;
  std::map<std::string, std::shared_ptr<Job>> jobs_;  // by requested name; loop thread only
  mutable std::mutex dest_mutex_;
  std::condition_variable dest_free_;
  std::set<std::string> dests_;  // files being written, guarded by dest_mutex_
};

}  // namespace vks::server
