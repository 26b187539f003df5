#pragma once
// Loads and unloads served models on threads of their own: a load reads gigabytes and compiles
// kernels (seconds to minutes), an unload joins an engine thread and frees device memory; neither
// may run on the socket loop, nor hold a thread of libuv's pool that tokenizing and rendering need.
// Completions come back to the loop thread through a uv_async handle. Exceptions of the work are
// caught on its thread and handed to the completion; none crosses a thread boundary.
#include <uv.h>

#include <exception>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace vks::server {

struct ServedModel;

class ModelLoader {
 public:
  using Load = std::function<std::shared_ptr<ServedModel>()>;                     // its own thread; may throw
  using Loaded = std::function<void(std::shared_ptr<ServedModel>, std::exception_ptr)>;  // loop thread

  explicit ModelLoader(uv_loop_t* loop);
  ~ModelLoader();  // joins every thread; completions not delivered yet are dropped
  ModelLoader(const ModelLoader&) = delete;
  ModelLoader& operator=(const ModelLoader&) = delete;

  void load(Load work, Loaded done);
  // Destroys `model` (its engine, runner and weights) on a thread of its own.
  void dispose(std::shared_ptr<ServedModel> model);
  // Closes the async handle (the loop must run once more to finish closing it) and joins every
  // thread: loads still running finish first (their completions are dropped).
  void close();
  size_t running() const;

 private:
  struct Finished {
    std::shared_ptr<ServedModel> model;
    std::exception_ptr error;
    Loaded done;
  };
  void start(std::function<void()> body);
  static void on_async(uv_async_t* async);
  void deliver();

  uv_loop_t* loop_;
  uv_async_t async_{};
  bool open_ = false;
  mutable std::mutex mutex_;
  std::vector<Finished> finished_;         // guarded by mutex_
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers_;            // loop thread only
  size_t running_ = 0;                     // guarded by mutex_
  bool closing_ = false;                   // guarded by mutex_
};

}  // namespace vks::server
