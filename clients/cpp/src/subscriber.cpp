// Following a request's PUB topic with duplicate dropping and gap filling through replay.
#include <map>

#include <zmq.hpp>

#include "clients/cpp/src/wire.h"
#include "vkstream/client.h"

namespace vkstream {

namespace {
// Silence after which we ask replay whether events were missed (a dropped PUB message, or a
// request that finished before the daemon saw our subscription).
constexpr std::chrono::milliseconds kGapCheckInterval{500};
constexpr size_t kMaxAhead = 4096;  // out-of-order events held while a gap is filled
}  // namespace

struct Subscriber::Impl {
  zmq::context_t context;
  zmq::socket_t socket{context, zmq::socket_type::sub};
  std::string topic;
  std::string id;
  Client* control = nullptr;
  int64_t expected = 0;              // next seq to deliver
  std::map<int64_t, Event> ahead;    // received, seq > expected
  bool finished = false;
  int64_t replays = 0;

  void hold(Event ev) {
    if (ev.seq < expected || ev.seq < 0) return;  // duplicate (history replayed to us) or malformed
    if (ahead.size() >= kMaxAhead && ahead.count(ev.seq) == 0) return;  // replay will bring it again
    ahead.emplace(ev.seq, std::move(ev));
  }

  // Asks replay for everything from `expected`; true when it brought something new.
  bool fill_gap() {
    if (control == nullptr) return false;
    bool got = false;
    for (;;) {
      ++replays;
      Replay r = control->replay(id, expected);
      for (Event& ev : r.events) {
        if (ev.seq >= expected && ahead.count(ev.seq) == 0) got = true;
        hold(std::move(ev));
      }
      if (!r.truncated || r.events.empty() || r.next_seq <= expected) break;
      if (ahead.count(expected) != 0) break;  // enough to make progress; more comes live or next time
    }
    return got;
  }

  std::optional<Event> pop_ready() {
    auto it = ahead.find(expected);
    if (it == ahead.end()) return std::nullopt;
    Event ev = std::move(it->second);
    ahead.erase(it);
    ++expected;
    if (ev.kind == EventKind::kFinished) {
      finished = true;
      ahead.clear();
    }
    return ev;
  }

  // Receives one published message within `wait`; false when none came.
  bool receive(std::chrono::milliseconds wait) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) == 0) return false;
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t part;
      if (!socket.recv(part, zmq::recv_flags::none)) return false;
      const bool more = part.more();
      parts.push_back(std::move(part));
      if (!more) break;
    }
    if (parts.size() != 2 || parts[0].to_string_view() != topic) return true;  // not ours / malformed
    Value map = detail::unpack_value(parts[1].to_string_view());
    Event ev = parse_event(map);
    ev.received_at = std::chrono::steady_clock::now();
    if (ev.id.empty()) ev.id = id;
    const bool gap = ev.seq > expected;
    hold(std::move(ev));
    if (gap && ahead.count(expected) == 0) fill_gap();
    return true;
  }
};

Subscriber::Subscriber(const std::string& pub_endpoint, std::string topic, std::string request_id, Client* control)
    : impl_(std::make_unique<Impl>()) {
  impl_->topic = std::move(topic);
  impl_->id = std::move(request_id);
  impl_->control = control;
  try {
    impl_->socket.set(zmq::sockopt::linger, 0);
    impl_->socket.set(zmq::sockopt::subscribe, impl_->topic);
    impl_->socket.connect(pub_endpoint);
  } catch (const zmq::error_t& e) {
    throw ClientError(ErrorKind::kUsage, "cannot subscribe at '" + pub_endpoint + "': " + e.what());
  }
}

Subscriber::Subscriber(Subscriber&&) noexcept = default;
Subscriber& Subscriber::operator=(Subscriber&&) noexcept = default;
Subscriber::~Subscriber() = default;

int64_t Subscriber::replays_used() const { return impl_->replays; }

std::optional<Event> Subscriber::next(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (s.finished) return std::nullopt;
    if (std::optional<Event> ev = s.pop_ready()) return ev;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      if (s.fill_gap()) continue;
      throw ClientError(ErrorKind::kTimeout, "no event of request " + s.id + " on " + s.topic + " within " +
                                                 std::to_string(timeout.count()) + " ms");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    try {
      if (!s.receive(std::min(left, kGapCheckInterval))) s.fill_gap();
    } catch (const zmq::error_t& e) {
      throw ClientError(ErrorKind::kTransport, std::string("subscriber socket failed: ") + e.what());
    }
  }
}

Subscriber follow(Client& control, const std::string& id) {
  RequestStatus st = control.status(id);
  if (st.topic.empty()) throw ClientError(ErrorKind::kProtocol, "vkstreamd reported no topic for request " + id);
  return Subscriber(control.pub_endpoint(), st.topic, st.id.empty() ? id : st.id, &control);
}

}  // namespace vkstream
