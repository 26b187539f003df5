#include "vkstream/client.h"

#include <deque>
#include <map>
#include <set>

#include "clients/cpp/src/wire.h"
#include "clients/cpp/src/transport.h"

namespace vkstream {

namespace {

constexpr uint32_t kMaxFrameBytes = 64u << 20;  // what we accept from the daemon (its answers are small)
constexpr int32_t kClientProtocolVersion = 1;

ServerError server_error_from(const Value& msg) {
  return ServerError(msg.get_string("code", "internal"), msg.get_string("message"), msg.get_string("field"),
                     msg.get_string("id"), msg.get_int("retry_after_ms"));
}

}  // namespace

struct Client::Impl {
  std::unique_ptr<detail::Transport> transport;
  Endpoint endpoint;
  std::chrono::milliseconds timeout{30000};
  int64_t next_tag = 1;
  std::set<int64_t> awaited;          // tags of calls in progress
  std::map<int64_t, Value> answers;   // tag → answer that arrived for an awaited tag
  std::deque<Event> pending;         // stream events not yet taken, in arrival order
  std::string hello_pub_endpoint;
  bool said_hello = false;

  // Reads one message (waiting up to `wait`) and files it. False when nothing arrived.
  bool pump(std::chrono::milliseconds wait) {
    std::optional<std::string> payload = transport->receive(wait);
    if (!payload) return false;
    const auto received = std::chrono::steady_clock::now();
    Value msg = detail::unpack_value(*payload);
    if (!msg.is_map()) throw ClientError(ErrorKind::kProtocol, "vkstreamd sent a message that is not a map");
    // Answers carry the request's tag, stream events never do (docs/PROTOCOL.md).
    if (const Value* tag = msg.find("tag"); tag != nullptr && !tag->is_nil()) {
      if (auto t = tag->as_int(); t && awaited.count(*t) != 0) answers[*t] = std::move(msg);
      return true;  // else a late answer to a call that timed out: dropped
    }
    const std::string type = msg.get_string("type");
    if (msg.find("id") != nullptr) {
      pending.push_back(parse_event(msg));
      pending.back().received_at = received;
      return true;
    }
    if (type == "error") throw server_error_from(msg);  // about the connection itself
    return true;  // an unknown message type from a newer server: skipped
  }

  Value call(const std::string& type, int64_t tag, const std::string& payload) {
    awaited.insert(tag);
    struct Forget {  // whatever happens, this tag is no longer awaited afterwards
      Impl* impl;
      int64_t tag;
      ~Forget() {
        impl->awaited.erase(tag);
        impl->answers.erase(tag);
      }
    } forget{this, tag};
    transport->send(payload);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto it = answers.find(tag); it != answers.end()) {
        Value answer = std::move(it->second);
        answers.erase(it);
        if (answer.get_string("type") == "error") throw server_error_from(answer);
        return answer;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !pump(left)) {
        if (std::chrono::steady_clock::now() < deadline) continue;
        throw ClientError(ErrorKind::kTimeout, "no answer to `" + type + "` from vkstreamd (" + transport->describe() +
                                                   ") within " + std::to_string(timeout.count()) +
                                                   " ms; if it is not running, " + detail::not_running_hint());
      }
    }
  }

  Value call(const std::string& type, const Value& fields = Value()) {
    const int64_t tag = next_tag++;
    return call(type, tag, detail::encode_simple_request(type, tag, fields));
  }

  std::optional<Event> take(const std::string* id) {
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (id == nullptr || it->id == *id) {
        Event ev = std::move(*it);
        pending.erase(it);
        return ev;
      }
    }
    return std::nullopt;
  }

  std::optional<Event> next_event(const std::string* id, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (auto ev = take(id)) return ev;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) return std::nullopt;
      if (!pump(left) && std::chrono::steady_clock::now() >= deadline) return take(id);
    }
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Client Client::connect(const Endpoint& endpoint) {
  auto impl = std::make_unique<Impl>();
  impl->endpoint = endpoint;
  if (!endpoint.unix_socket.empty()) {
    impl->transport = detail::connect_unix_transport(endpoint.unix_socket, kMaxFrameBytes);
  } else if (!endpoint.zmq_endpoint.empty()) {
    impl->transport = detail::connect_zmq_transport(endpoint.zmq_endpoint);
  } else {
    throw ClientError(ErrorKind::kUsage, "no endpoint given: set a Unix socket path or a ZeroMQ endpoint");
  }
  return Client(std::move(impl));
}

Client Client::connect_unix(const std::string& path) { return connect(Endpoint{path, {}, {}}); }
Client Client::connect_zmq(const std::string& endpoint) { return connect(Endpoint{{}, endpoint, {}}); }

void Client::set_timeout(std::chrono::milliseconds timeout) { impl_->timeout = timeout; }

Hello Client::hello() {
  Value a = impl_->call("hello", Value::Map{{"version", Value(kClientProtocolVersion)}, {"client", Value("vkstream-cpp")}});
  Hello h;
  h.version = a.get_int("version");
  h.server = a.get_string("server");
  h.pub_endpoint = a.get_string("pub_endpoint");
  if (const Value* m = a.find("model")) h.model = *m;
  if (const Value* l = a.find("limits")) h.limits = *l;
  h.raw = std::move(a);
  impl_->hello_pub_endpoint = h.pub_endpoint;
  impl_->said_hello = true;
  return h;
}

namespace {

// `request` with the `model` field when one is named (absent = the default model).
Value::Map with_model(Value::Map request, const std::string& model) {
  if (!model.empty()) request.emplace_back("model", Value(model));
  return request;
}

}  // namespace

Value Client::model(const std::string& model) {
  Value a = impl_->call("model", with_model({}, model));
  if (const Value* m = a.find("model")) return *m;
  return a;
}

ModelList Client::models() { return detail::to_model_list(impl_->call("models")); }

LoadResult Client::load(const std::string& model, std::optional<double> keep_alive) {
  if (model.empty()) throw ClientError(ErrorKind::kUsage, "load needs a model name");
  Value::Map request = with_model({}, model);
  if (keep_alive) request.emplace_back("keep_alive", Value(*keep_alive));
  return detail::to_load_result(impl_->call("load", std::move(request)));
}

UnloadResult Client::unload(const std::string& model) {
  if (model.empty()) throw ClientError(ErrorKind::kUsage, "unload needs a model name");
  return detail::to_unload_result(impl_->call("unload", with_model({}, model)));
}

Value Client::stats() {
  Value a = impl_->call("stats", Value::Map{{"format", Value("map")}});
  if (const Value* s = a.find("stats"); s != nullptr && s->is_map()) return *s;
  return a;
}

std::string Client::stats_prometheus() {
  return impl_->call("stats", Value::Map{{"format", Value("prometheus")}}).get_string("text");
}

RequestStatus Client::status(const std::string& id) {
  Value a = impl_->call("status", Value::Map{{"id", Value(id)}});
  RequestStatus s;
  s.id = a.get_string("id");
  s.state = a.get_string("state");
  s.topic = a.get_string("topic");
  s.seq = a.get_int("last_seq", a.get_int("seq", -1));
  s.raw = std::move(a);
  return s;
}

void Client::cancel(const std::string& id) { impl_->call("cancel", Value::Map{{"id", Value(id)}}); }

std::vector<int32_t> Client::tokenize(const std::string& text, std::optional<bool> add_bos, bool parse_special,
                                      const std::string& model) {
  Value::Map request{{"text", Value(text)}, {"parse_special", Value(parse_special)}};
  if (add_bos) request.emplace_back("add_bos", Value(*add_bos));
  Value a = impl_->call("tokenize", with_model(std::move(request), model));
  std::vector<int32_t> ids;
  if (const Value* arr = a.find("ids"); arr != nullptr && arr->as_array() != nullptr) {
    for (const Value& v : *arr->as_array()) ids.push_back(static_cast<int32_t>(v.as_int().value_or(-1)));
  }
  return ids;
}

std::string Client::detokenize(const std::vector<int32_t>& ids, const std::string& model) {
  Value::Array arr;
  for (int32_t id : ids) arr.emplace_back(int64_t{id});
  return impl_->call("detokenize", with_model({{"ids", Value(std::move(arr))}}, model)).get_string("text");
}

std::vector<std::vector<float>> Client::embed(const std::vector<std::string>& texts, const EmbedOptions& options) {
  Value::Array input;
  for (const std::string& t : texts) input.emplace_back(t);
  Value::Map request{{"input", Value(std::move(input))}, {"normalize", Value(options.normalize)}};
  if (!options.pooling.empty()) request.emplace_back("pooling", Value(options.pooling));
  if (options.add_bos) request.emplace_back("add_bos", Value(*options.add_bos));
  if (options.keep_alive) request.emplace_back("keep_alive", Value(*options.keep_alive));
  Value a = impl_->call("embed", with_model(std::move(request), options.model));
  std::vector<std::vector<float>> out;
  if (const Value* arr = a.find("embeddings"); arr != nullptr && arr->as_array() != nullptr) {
    for (const Value& v : *arr->as_array()) {
      std::vector<float>& vec = out.emplace_back();
      if (const Value::Array* xs = v.as_array()) {
        for (const Value& x : *xs) vec.push_back(static_cast<float>(x.as_double().value_or(0.0)));
      }
    }
  }
  return out;
}

Replay Client::replay(const std::string& id, int64_t from_seq) {
  Value a = impl_->call("replay", Value::Map{{"id", Value(id)}, {"from_seq", Value(from_seq)}});
  Replay r;
  r.id = a.get_string("id", id);
  if (const Value* evs = a.find("events"); evs != nullptr && evs->as_array() != nullptr) {
    for (const Value& e : *evs->as_array()) {
      Event ev = parse_event(e);
      if (ev.id.empty()) ev.id = r.id;
      r.events.push_back(std::move(ev));
    }
  }
  r.next_seq = a.get_int("next_seq", r.events.empty() ? from_seq : r.events.back().seq + 1);
  r.finished = a.get_bool("finished");
  r.truncated = a.get_bool("truncated");
  return r;
}

Accepted Client::submit(const GenerateOptions& options) {
  const int64_t tag = impl_->next_tag++;
  Value a = impl_->call(options.messages.empty() ? "generate" : "chat", tag, detail::encode_generate(options, tag));
  Accepted acc;
  acc.id = a.get_string("id");
  acc.topic = a.get_string("topic");
  acc.queue_position = a.get_int("queue_position");
  acc.prompt_tokens = a.get_int("prompt_tokens");
  acc.model = a.get_string("model");
  acc.raw = std::move(a);
  if (acc.id.empty()) throw ClientError(ErrorKind::kProtocol, "vkstreamd accepted a request without an id");
  return acc;
}

std::optional<Event> Client::next_event(const std::string& id, std::chrono::milliseconds timeout) {
  return impl_->next_event(&id, timeout);
}

std::optional<Event> Client::next_any_event(std::chrono::milliseconds timeout) {
  return impl_->next_event(nullptr, timeout);
}

Completion Client::generate(const GenerateOptions& options, const std::function<void(const Event&)>& on_event) {
  Stream s = stream(options);
  Completion c;
  c.id = s.id();
  std::optional<ServerError> failure;
  while (std::optional<Event> ev = s.next()) {
    if (on_event) on_event(*ev);
    switch (ev->kind) {
      case EventKind::kToken:
        c.text += ev->text;
        c.ids.insert(c.ids.end(), ev->ids.begin(), ev->ids.end());
        break;
      case EventKind::kError:
        failure.emplace(ev->error_code, ev->error_message, ev->raw.get_string("field"), ev->id);
        break;
      case EventKind::kToolCall:
        c.tool_calls.push_back(ev->tool_call);
        break;
      case EventKind::kFinished:
        c.finish_reason = ev->finish_reason;
        c.usage = ev->usage;
        c.timings = ev->timings;
        break;
      default:
        break;
    }
  }
  if (failure) throw *failure;
  return c;
}

Stream Client::stream(const GenerateOptions& options) { return Stream(*this, submit(options)); }

std::string Client::pub_endpoint() {
  if (!impl_->endpoint.pub_endpoint.empty()) return impl_->endpoint.pub_endpoint;
  if (!impl_->said_hello) hello();
  if (!impl_->hello_pub_endpoint.empty()) return impl_->hello_pub_endpoint;
  return default_endpoint().pub_endpoint;
}

Stream::Stream(Client& client, Accepted accepted) : client_(&client), accepted_(std::move(accepted)) {}

std::optional<Event> Stream::next() {
  if (finished_) return std::nullopt;
  std::optional<Event> ev = client_->next_event(accepted_.id, client_->impl_->timeout);
  if (!ev) {
    throw ClientError(ErrorKind::kTimeout, "no event of request " + accepted_.id + " within " +
                                               std::to_string(client_->impl_->timeout.count()) + " ms");
  }
  if (ev->kind == EventKind::kFinished) finished_ = true;
  return ev;
}

}  // namespace vkstream
