// The C++ client library against the real vkstreamd on stories260K: greedy output equals the
// reference over both transports, cancel from a second client, a late follow gets the whole
// stream, errors surface as typed errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/clients/process_util.h"
#include "tests/clients/reference.h"
#include "vkstream/client.h"

namespace {

using vks::test::Daemon;

class ClientE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new Daemon(); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static vkstream::Client connect() {
    vkstream::Client c = vkstream::Client::connect(daemon_->endpoint());
    c.set_timeout(std::chrono::seconds(30));
    return c;
  }
  static vkstream::GenerateOptions greedy_reference_request() {
    vkstream::GenerateOptions o;
    o.prompt = vks::test::kReferencePrompt;
    o.temperature = 0;
    o.max_tokens = 60;
    return o;
  }
  static Daemon* daemon_;
  const vks::test::GreedyReference ref_ = vks::test::load_greedy_reference();
};
Daemon* ClientE2E::daemon_ = nullptr;

TEST_F(ClientE2E, HelloDescribesTheServer) {
  vkstream::Client c = connect();
  const vkstream::Hello h = c.hello();
  EXPECT_EQ(h.version, 1);
  EXPECT_FALSE(h.server.empty());
  EXPECT_EQ(h.model.get_int("vocab_size"), 512);
  EXPECT_FALSE(h.pub_endpoint.empty());
}

TEST_F(ClientE2E, GreedyCallbackMatchesReferenceIds) {
  vkstream::Client c = connect();
  int64_t expected_seq = 0;
  bool in_order = true;
  const vkstream::Completion done = c.generate(greedy_reference_request(), [&](const vkstream::Event& ev) {
    in_order = in_order && ev.seq == expected_seq;
    ++expected_seq;
  });
  EXPECT_TRUE(in_order);
  EXPECT_EQ(done.ids, ref_.generated_ids);
  EXPECT_EQ(std::string(vks::test::kReferencePrompt) + done.text + "\n", ref_.text);
  EXPECT_EQ(done.finish_reason, "length");
  EXPECT_EQ(done.usage.prompt_tokens, 5);
  EXPECT_EQ(done.usage.generated_tokens, 60);
}

TEST_F(ClientE2E, GreedyIteratorOverZeroMqMatchesReferenceIds) {
  vkstream::Client c = vkstream::Client::connect(daemon_->zmq_endpoint());
  c.set_timeout(std::chrono::seconds(30));
  vkstream::Stream s = c.stream(greedy_reference_request());
  EXPECT_EQ(s.accepted().prompt_tokens, 5);
  EXPECT_EQ(s.accepted().topic.rfind("vks.", 0), 0u);
  std::vector<int32_t> ids;
  std::string last_type;
  for (const vkstream::Event& ev : s) {
    ids.insert(ids.end(), ev.ids.begin(), ev.ids.end());
    last_type = ev.type;
  }
  EXPECT_EQ(ids, ref_.generated_ids);
  EXPECT_EQ(last_type, "finished");
}

TEST_F(ClientE2E, TokenizeAndDetokenize) {
  vkstream::Client c = connect();
  EXPECT_EQ(c.tokenize(vks::test::kReferencePrompt, true), ref_.prompt_ids);
  EXPECT_EQ(std::string(vks::test::kReferencePrompt) + c.detokenize(ref_.generated_ids) + "\n", ref_.text);
}

TEST_F(ClientE2E, CancelFromASecondClientStopsTheRequest) {
  vkstream::Client owner = connect();
  vkstream::Client other = connect();
  vkstream::GenerateOptions o;
  o.prompt = vks::test::kReferencePrompt;
  o.temperature = 0;
  o.ignore_eos = true;
  o.max_tokens = 2000;  // far more than can be produced before the cancel lands
  const vkstream::Accepted acc = owner.submit(o);
  other.cancel(acc.id);
  std::optional<vkstream::Event> ev;
  int64_t generated = 0;
  std::string reason;
  while ((ev = owner.next_event(acc.id, std::chrono::seconds(30)))) {
    generated += static_cast<int64_t>(ev->ids.size());
    if (ev->is_last()) {
      reason = ev->finish_reason;
      break;
    }
  }
  EXPECT_EQ(reason, "cancelled");
  EXPECT_LT(generated, 2000);
  const vkstream::RequestStatus st = other.status(acc.id);
  EXPECT_EQ(st.state, "finished");
}

TEST_F(ClientE2E, LateFollowGetsTheWholeStream) {
  vkstream::Client c = connect();
  const vkstream::Completion done = c.generate(greedy_reference_request());
  // The request has finished; a follower arriving now still sees every event from seq 0.
  vkstream::Client control = connect();
  vkstream::Subscriber sub = vkstream::follow(control, done.id);
  std::vector<int32_t> ids;
  int64_t expected_seq = 0;
  std::string reason;
  while (std::optional<vkstream::Event> ev = sub.next(std::chrono::seconds(20))) {
    EXPECT_EQ(ev->seq, expected_seq++);
    ids.insert(ids.end(), ev->ids.begin(), ev->ids.end());
    if (ev->is_last()) reason = ev->finish_reason;
  }
  EXPECT_EQ(ids, ref_.generated_ids);
  EXPECT_EQ(reason, "length");
}

TEST_F(ClientE2E, FollowWhileRunningMatchesTheDirectStream) {
  vkstream::Client owner = connect();
  vkstream::GenerateOptions o = greedy_reference_request();
  o.max_tokens = 400;
  o.ignore_eos = true;
  vkstream::Stream s = owner.stream(o);
  vkstream::Client control = connect();
  vkstream::Subscriber sub = vkstream::follow(control, s.id());
  std::vector<int32_t> direct;
  for (const vkstream::Event& ev : s) direct.insert(direct.end(), ev.ids.begin(), ev.ids.end());
  std::vector<int32_t> followed;
  int64_t expected_seq = 0;
  while (std::optional<vkstream::Event> ev = sub.next(std::chrono::seconds(20))) {
    EXPECT_EQ(ev->seq, expected_seq++);
    followed.insert(followed.end(), ev->ids.begin(), ev->ids.end());
  }
  EXPECT_EQ(direct.size(), 400u);
  EXPECT_EQ(followed, direct);
  EXPECT_TRUE(std::equal(ref_.generated_ids.begin(), ref_.generated_ids.end(), direct.begin()));
}

TEST_F(ClientE2E, ErrorsAreTyped) {
  vkstream::Client c = connect();
  vkstream::GenerateOptions bad = greedy_reference_request();
  bad.temperature = -1;
  try {
    c.submit(bad);
    FAIL() << "a negative temperature was accepted";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "invalid_field");
    EXPECT_EQ(e.field(), "temperature");
  }
  try {
    c.cancel("no-such-request");
    FAIL() << "cancel of an unknown id succeeded";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "not_found");
  }
  try {
    c.status("no-such-request");
    FAIL() << "status of an unknown id succeeded";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "not_found");
  }
  vkstream::GenerateOptions dup = greedy_reference_request();
  dup.id = "client-e2e-dup";
  c.generate(dup);
  try {
    c.submit(dup);
    FAIL() << "a duplicate client-chosen id was accepted";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "already_exists");
  }
  // The connection still works after errors.
  EXPECT_EQ(c.generate(greedy_reference_request()).ids, ref_.generated_ids);
}

TEST_F(ClientE2E, StatsInBothFormats) {
  vkstream::Client c = connect();
  c.generate(greedy_reference_request());
  const vkstream::Value stats = c.stats();
  ASSERT_TRUE(stats.is_map());
  EXPECT_GE(stats.get_int("tokens_generated"), 60);
  EXPECT_NE(c.stats_prometheus().find("vkstream_"), std::string::npos);
}

}  // namespace

namespace {

double l2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

TEST_F(ClientE2E, EmbedReturnsOneVectorPerText) {
  vkstream::Client c = connect();
  const auto v = c.embed({"Once upon a time", "The cat sat on the mat.", "Once upon a time"});
  ASSERT_EQ(v.size(), 3u);
  for (const auto& e : v) {
    EXPECT_EQ(e.size(), 64u);
    EXPECT_NEAR(l2(e), 1.0, 1e-5);
  }
  EXPECT_EQ(v[0], v[2]);
  EXPECT_NE(v[0], v[1]);
  vkstream::EmbedOptions last;
  last.pooling = "last";
  last.normalize = false;
  const auto w = c.embed({"Once upon a time"}, last);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_GT(std::fabs(l2(w[0]) - 1.0), 1e-3);
  std::string too_long;
  while (too_long.size() < 40 * 1024) too_long += "Once upon a time, there was a little girl. ";
  try {
    c.embed({too_long});
    FAIL() << "an input longer than the context was accepted";
  } catch (const vkstream::ServerError& e) {
    EXPECT_EQ(e.code(), "prompt_too_long");
    EXPECT_EQ(e.field(), "input.0");
  }
}

}  // namespace
