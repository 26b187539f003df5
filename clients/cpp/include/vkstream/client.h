#pragma once
// vkstream client: talks to vkstreamd over its Unix socket or ZeroMQ ROUTER endpoint.
//
// A Client is one connection and is used from one thread at a time. Several requests may stream at
// once on it: every message read is dispatched to the request it belongs to, so events of one
// request are buffered while another is being read.
//
//   vkstream::Client c = vkstream::Client::connect(vkstream::default_endpoint());
//   vkstream::GenerateOptions o; o.prompt = "Once upon a time"; o.temperature = 0;
//   c.generate(o, [](const vkstream::Event& e) { std::cout << e.text << std::flush; });
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkstream/errors.h"
#include "vkstream/types.h"
#include "vkstream/value.h"

namespace vkstream {

class Stream;

class Client {
 public:
  // Connects to endpoint.unix_socket if set, else endpoint.zmq_endpoint. Throws ClientError
  // (kNotRunning when nothing listens there).
  static Client connect(const Endpoint& endpoint);
  static Client connect_unix(const std::string& path);
  static Client connect_zmq(const std::string& endpoint);

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // How long a call waits for its answer or for the next event before throwing kTimeout.
  void set_timeout(std::chrono::milliseconds timeout);

  Hello hello();
  // The model info map of `model` ("" = the default model).
  Value model(const std::string& model = "");
  // Every model the daemon can serve, loaded or not (docs/PROTOCOL.md 3.12).
  ModelList models();
  // Loads `model` now and returns once it is loaded (ServerError model_load_failed / not_found when
  // it cannot be); keep_alive as GenerateOptions::keep_alive.
  LoadResult load(const std::string& model, std::optional<double> keep_alive = std::nullopt);
  // Asks the daemon to unload `model` once its running requests finish; returns at once.
  UnloadResult unload(const std::string& model);
  Value stats();                 // the daemon's stats map
  std::string stats_prometheus();  // Prometheus text exposition
  RequestStatus status(const std::string& id);
  void cancel(const std::string& id);  // throws ServerError (not_found, ...) when refused
  // add_bos unset: the model's tokenizer.ggml.add_bos_token (Llama: yes, Qwen: no).
  // model: "" = the default model's tokenizer.
  std::vector<int32_t> tokenize(const std::string& text, std::optional<bool> add_bos = std::nullopt,
                                bool parse_special = false, const std::string& model = "");
  std::string detokenize(const std::vector<int32_t>& ids, const std::string& model = "");
  // One embedding per text, in order (waits for the whole answer; throws ServerError, e.g.
  // prompt_too_long naming input.N).
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts, const EmbedOptions& options = {});
  Replay replay(const std::string& id, int64_t from_seq = 0);

  // Submits a request; its events then arrive through next_event / a Stream.
  Accepted submit(const GenerateOptions& options);
  // The next event of request `id`, or nullopt when `timeout` passes first. Events of other
  // requests read meanwhile are kept for them.
  std::optional<Event> next_event(const std::string& id, std::chrono::milliseconds timeout);
  // The next event of any request on this connection, or nullopt after `timeout`.
  std::optional<Event> next_any_event(std::chrono::milliseconds timeout);

  // Submits and streams until the request finishes: on_event sees every event in order.
  // Returns the concatenated completion. Throws ServerError when the request ends in an error.
  Completion generate(const GenerateOptions& options, const std::function<void(const Event&)>& on_event = {});
  // Submits and returns an iterable stream of the request's events (ends after `finished`).
  Stream stream(const GenerateOptions& options);

  // The XPUB endpoint subscribers should use (from `hello`, the Endpoint, or the default).
  std::string pub_endpoint();

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class Stream;
};

// The events of one request, in order, ending with `finished`. Iterate with range-for or next().
class Stream {
 public:
  Stream(Client& client, Accepted accepted);
  const Accepted& accepted() const { return accepted_; }
  const std::string& id() const { return accepted_.id; }
  // The next event; nullopt once the finished event was returned. Throws kTimeout.
  std::optional<Event> next();
  void cancel() { client_->cancel(accepted_.id); }

  class iterator {
   public:
    using value_type = Event;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(Stream* s) : stream_(s) { advance(); }
    const Event& operator*() const { return *current_; }
    const Event* operator->() const { return &*current_; }
    iterator& operator++() { advance(); return *this; }
    void operator++(int) { advance(); }
    bool operator==(const iterator& o) const { return done() == o.done(); }

   private:
    bool done() const { return !current_.has_value(); }
    void advance() { current_ = stream_->next(); }
    Stream* stream_ = nullptr;
    std::optional<Event> current_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

 private:
  Client* client_;
  Accepted accepted_;
  bool finished_ = false;
};

// Follows a request's PUB topic on the daemon's XPUB socket: every event exactly once, in seq order,
// ending with `finished`. Duplicates (the daemon replays history to a new subscriber) are dropped by
// seq; a gap, or silence longer than the gap timeout, is filled through `replay` on `control`.
class Subscriber {
 public:
  // control: a connection used for replay (may be null: then gaps cannot be filled).
  Subscriber(const std::string& pub_endpoint, std::string topic, std::string request_id, Client* control);
  Subscriber(Subscriber&&) noexcept;
  Subscriber& operator=(Subscriber&&) noexcept;
  ~Subscriber();

  // The next event in seq order; nullopt once finished was returned. Throws kTimeout when nothing
  // arrives (and replay finds nothing new) within `timeout`.
  std::optional<Event> next(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Replay calls made to fill gaps so far (for tests and diagnostics).
  int64_t replays_used() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Subscribes to the stream of request `id` (topic from `status`), using `control` for replay.
Subscriber follow(Client& control, const std::string& id);

}  // namespace vkstream
