// The client library against a scripted fake daemon: answer matching by tag, events of several
// requests on one connection, typed errors, timeouts and broken connections.
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/clients/fake_daemon.h"
#include "vkstream/client.h"

namespace {

using vkstream::Value;
using vks::test::FakeDaemon;
using vks::test::answer;

Value token_event(const std::string& id, int64_t seq, std::vector<int64_t> ids, const std::string& text) {
  Value::Array arr;
  for (int64_t i : ids) arr.emplace_back(i);
  return Value::Map{{"type", Value("token")}, {"id", Value(id)}, {"seq", Value(seq)}, {"ids", Value(std::move(arr))},
                    {"text", Value(text)}};
}

Value finished_event(const std::string& id, int64_t seq, const std::string& reason) {
  return Value::Map{{"type", Value("finished")}, {"id", Value(id)}, {"seq", Value(seq)}, {"reason", Value(reason)},
                    {"usage", Value::Map{{"prompt_tokens", Value(5)}, {"cached_tokens", Value(0)},
                                         {"generated_tokens", Value(2)}}},
                    {"timings", Value::Map{{"queue_ms", Value(1.5)}, {"ttft_ms", Value(2.5)}, {"total_ms", Value(9.0)}}}};
}

TEST(ClientUnit, GenerateCollectsTokensInOrder) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    EXPECT_EQ(req.get_string("type"), "generate");
    EXPECT_EQ(req.get_string("prompt"), "hi");
    EXPECT_DOUBLE_EQ(req.get_double("temperature", -1), 0.0);
    EXPECT_EQ(req.find("top_k"), nullptr);  // unset options are not sent
    return {answer(req, "accepted", {{"id", Value("r1")}, {"topic", Value("vks.0")}}),
            token_event("r1", 0, {7}, "Hel"), token_event("r1", 1, {8, 9}, "lo"), finished_event("r1", 2, "length")};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  vkstream::GenerateOptions o;
  o.prompt = "hi";
  o.temperature = 0;
  std::vector<int64_t> seqs;
  const vkstream::Completion done = c.generate(o, [&](const vkstream::Event& ev) { seqs.push_back(ev.seq); });
  EXPECT_EQ(done.id, "r1");
  EXPECT_EQ(done.text, "Hello");
  EXPECT_EQ(done.ids, (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ(done.finish_reason, "length");
  EXPECT_EQ(done.usage.prompt_tokens, 5);
  EXPECT_DOUBLE_EQ(done.timings.ttft_ms, 2.5);
  EXPECT_EQ(seqs, (std::vector<int64_t>{0, 1, 2}));
}

// Events the caller may not use: a `progress` (no seq) and a type from a newer daemon. Both reach
// the event callback as what they are and change nothing in the completion.
TEST(ClientUnit, ProgressAndUnknownEventsAreHandedOnAndChangeNothing) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    return {answer(req, "accepted", {{"id", Value("r1")}, {"topic", Value("vks.0")}}),
            Value::Map{{"type", Value("progress")}, {"id", Value("r1")}, {"prompt_tokens", Value(40)},
                       {"prompt_tokens_done", Value(16)}, {"cached_tokens", Value(0)}},
            Value::Map{{"type", Value("from_the_future")}, {"id", Value("r1")}, {"text", Value("not a token")}},
            token_event("r1", 0, {7}, "Hel"), finished_event("r1", 1, "stop")};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  vkstream::GenerateOptions o;
  o.prompt = "hi";
  std::vector<vkstream::EventKind> kinds;
  int64_t progress_done = 0, progress_seq = 0;
  const vkstream::Completion done = c.generate(o, [&](const vkstream::Event& ev) {
    kinds.push_back(ev.kind);
    if (ev.kind == vkstream::EventKind::kProgress) {
      progress_done = ev.prompt_tokens_done;
      progress_seq = ev.seq;
    }
  });
  EXPECT_EQ(done.text, "Hel");
  EXPECT_EQ(done.finish_reason, "stop");
  EXPECT_EQ(kinds, (std::vector<vkstream::EventKind>{vkstream::EventKind::kProgress, vkstream::EventKind::kOther,
                                                      vkstream::EventKind::kToken, vkstream::EventKind::kFinished}));
  EXPECT_EQ(progress_done, 16);
  EXPECT_EQ(progress_seq, -1);
}

TEST(ClientUnit, EventsOfInterleavedRequestsReachTheirStreams) {
  int n = 0;
  FakeDaemon daemon([&n](const Value& req) -> std::vector<Value> {
    if (req.get_string("type") != "generate") return {};
    const std::string id = "r" + std::to_string(++n);
    if (n == 1) return {answer(req, "accepted", {{"id", Value(id)}})};
    // Second submit: its own events and the first request's, interleaved.
    return {token_event("r1", 0, {1}, "a"), answer(req, "accepted", {{"id", Value(id)}}), token_event("r2", 0, {2}, "b"),
            token_event("r1", 1, {3}, "c"), finished_event("r2", 1, "stop"), finished_event("r1", 2, "stop")};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  vkstream::Stream s1 = c.stream({});
  vkstream::Stream s2 = c.stream({});
  std::string t2;
  for (const vkstream::Event& ev : s2) t2 += ev.text;
  std::string t1;
  for (const vkstream::Event& ev : s1) t1 += ev.text;
  EXPECT_EQ(t1, "ac");
  EXPECT_EQ(t2, "b");
}

TEST(ClientUnit, ServerErrorsAreTyped) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    return {answer(req, "error", {{"code", Value("invalid_field")}, {"message", Value("temperature must be >= 0")},
                                  {"field", Value("temperature")}})};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.submit({});
    FAIL() << "expected a ServerError";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kServer);
    EXPECT_EQ(e.code(), "invalid_field");
    EXPECT_EQ(e.field(), "temperature");
    EXPECT_NE(std::string(e.what()).find("temperature must be"), std::string::npos);
  }
}

TEST(ClientUnit, StreamErrorEventMakesGenerateThrow) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    Value err = Value::Map{{"type", Value("error")}, {"id", Value("r9")}, {"seq", Value(1)},
                           {"code", Value("device_error")}, {"message", Value("lost device")}};
    return {answer(req, "accepted", {{"id", Value("r9")}}), token_event("r9", 0, {1}, "x"), err,
            finished_event("r9", 2, "error")};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.generate({});
    FAIL() << "expected a ServerError";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "device_error");
    EXPECT_EQ(e.request_id(), "r9");
  }
}

TEST(ClientUnit, NothingListeningIsNotRunning) {
  std::string path;
  {
    FakeDaemon gone([](const Value&) { return std::vector<Value>{}; });
    path = gone.socket_path();
  }
  try {
    vkstream::Client::connect_unix(path);
    FAIL() << "expected kNotRunning";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kNotRunning);
    EXPECT_NE(std::string(e.what()).find("vkstreamd --model"), std::string::npos);
  }
  try {
    vkstream::Client::connect_zmq("ipc://" + path + ".zmq");
    FAIL() << "expected kNotRunning";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kNotRunning);
  }
}

TEST(ClientUnit, SilenceIsATimeout) {
  FakeDaemon daemon([](const Value&) { return std::vector<Value>{}; });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  c.set_timeout(std::chrono::milliseconds(200));
  try {
    c.hello();
    FAIL() << "expected kTimeout";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kTimeout);
  }
}

TEST(ClientUnit, ClosedConnectionIsATransportError) {
  FakeDaemon daemon([](const Value&) { return std::vector<Value>{FakeDaemon::close_marker()}; });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.stats();
    FAIL() << "expected kTransport";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kTransport);
  }
}

TEST(ClientUnit, MalformedFrameIsAProtocolError) {
  FakeDaemon daemon([](const Value&) { return std::vector<Value>{}; });
  daemon.set_raw_reply(std::string("\x00\x00\x00\x03\xc1\xc1\xc1", 7));  // 0xc1 is never valid msgpack
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  try {
    c.model();
    FAIL() << "expected kProtocol";
  } catch (const vkstream::ClientError& e) {
    EXPECT_EQ(e.kind(), vkstream::ErrorKind::kProtocol);
  }
}

TEST(ClientUnit, SimpleCallsSendTheirFieldsAndReadTheirAnswers) {
  FakeDaemon daemon([](const Value& req) -> std::vector<Value> {
    const std::string type = req.get_string("type");
    if (type == "tokenize") {
      EXPECT_EQ(req.get_string("text"), "ab");
      EXPECT_FALSE(req.get_bool("add_bos", true));
      return {answer(req, "tokenize", {{"ids", Value(Value::Array{Value(4), Value(5)})}})};
    }
    if (type == "detokenize") return {answer(req, "detokenize", {{"text", Value("xy")}})};
    if (type == "status") {
      return {answer(req, "status", {{"id", req.get_string("id")}, {"state", Value("running")},
                                     {"topic", Value("vks.00112233445566778899aabbccddeeff")}, {"last_seq", Value(4)}})};
    }
    if (type == "cancel") {
      if (req.get_string("id") == "nope") {
        return {answer(req, "error", {{"code", Value("not_found")}, {"message", Value("no such request")}})};
      }
      return {answer(req, "cancelled", {{"id", req.get_string("id")}})};
    }
    if (type == "replay") {
      EXPECT_EQ(req.get_int("from_seq"), 1);
      return {answer(req, "replay", {{"id", Value("r")}, {"events", Value(Value::Array{token_event("r", 1, {3}, "z")})},
                                     {"next_seq", Value(2)}, {"finished", Value(false)}, {"truncated", Value(false)}})};
    }
    return {};
  });
  vkstream::Client c = vkstream::Client::connect_unix(daemon.socket_path());
  EXPECT_EQ(c.tokenize("ab", false), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(c.detokenize({4, 5}), "xy");
  const vkstream::RequestStatus st = c.status("abc");
  EXPECT_EQ(st.state, "running");
  EXPECT_EQ(st.seq, 4);
  EXPECT_EQ(st.topic, "vks.00112233445566778899aabbccddeeff");
  EXPECT_NO_THROW(c.cancel("abc"));
  EXPECT_THROW(c.cancel("nope"), vkstream::ServerError);
  const vkstream::Replay r = c.replay("r", 1);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].seq, 1);
  EXPECT_EQ(r.events[0].text, "z");
  EXPECT_EQ(r.next_seq, 2);
  EXPECT_FALSE(r.finished);
}

}  // namespace
