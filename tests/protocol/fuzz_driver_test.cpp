// Drives LLVMFuzzerTestOneInput (fuzz_protocol.cpp) with random bytes and with mutations of valid
// frames of every request and answer type, so the fuzz target runs in every build without clang.
#include <gtest/gtest.h>

#include <random>

#include "protocol/frame.h"
#include "protocol/requests.h"
#include "protocol/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace vks::proto {
namespace {

std::vector<std::string> seed_payloads() {
  std::vector<std::string> out;
  GenerateRequest g;
  g.prompt = "Once upon a time";
  g.logit_bias = {{3, 1.0}};
  g.stop = {"\n", "end"};
  g.stop_token_ids = {2};
  g.seed = 7;
  g.logprobs = 2;
  g.temperature = 0.7;
  g.max_tokens = 20;
  g.id = "client-1";
  g.deadline_ms = 1000;
  out.push_back(encode_request(RequestBody(g), Tag::of(1)));
  g.prompt_ids = {1, 2, 3};
  out.push_back(encode_request(RequestBody(g), Tag::of("x")));
  out.push_back(encode_request(RequestBody(HelloRequest{1, "fuzz"})));
  out.push_back(encode_request(RequestBody(CancelRequest{"abc"})));
  out.push_back(encode_request(RequestBody(StatusRequest{"abc"})));
  out.push_back(encode_request(RequestBody(StatsRequest{StatsFormat::kPrometheus})));
  out.push_back(encode_request(RequestBody(TokenizeRequest{"héllo", true, true})));
  out.push_back(encode_request(RequestBody(DetokenizeRequest{{1, 2, 3}})));
  out.push_back(encode_request(RequestBody(ModelRequest{})));
  out.push_back(encode_request(RequestBody(ReplayRequest{"abc", 3})));
  StreamEvent ev;
  ev.id = "abc";
  ev.seq = 4;
  ev.ids = {5, 6};
  ev.text = "hi";
  ev.logprobs = {GeneratedToken{5, -0.5f, {{5, -0.5f}, {9, -1.5f}}}, GeneratedToken{6, -0.1f, {}}};
  out.push_back(encode_event(ev));
  ev.type = StreamEventType::kFinished;
  out.push_back(encode_event(ev));
  out.push_back(encode_answer(AnswerBody(HelloAnswer{}), Tag::of(3)));
  out.push_back(encode_answer(AnswerBody(AcceptedAnswer{"abc", "vks.00", 1, 2, false})));
  out.push_back(encode_answer(AnswerBody(StatusAnswer{})));
  StatsAnswer st;
  st.stats.ttft_ms = make_histogram(std::vector<double>{1, 2, 3});
  out.push_back(encode_answer(AnswerBody(st)));
  out.push_back(encode_error(make_error(WireError::kInvalidField, "m", "f"), Tag::of("t"), "abc", 10));
  std::vector<std::string> events = {encode_event(ev)};
  out.push_back(encode_replay_raw("abc", events, 0, true, Tag::none()));
  return out;
}

std::string framed_input(std::mt19937_64& rng, const std::vector<std::string>& seeds, int frames) {
  std::string input;
  input.push_back(static_cast<char>(rng() % 4));
  input.push_back(static_cast<char>(rng()));
  for (int k = 0; k < frames; ++k) append_frame(input, seeds[rng() % seeds.size()]);
  return input;
}

void mutate(std::mt19937_64& rng, std::string& s) {
  const int n = 1 + static_cast<int>(rng() % 8);
  for (int k = 0; k < n && !s.empty(); ++k) {
    const size_t pos = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[pos] = static_cast<char>(rng()); break;                   // random byte
      case 1: s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8))); break;  // bit flip
      case 2: s.erase(pos, 1 + rng() % 4); break;                         // delete
      case 3: s.insert(pos, 1, static_cast<char>(rng())); break;          // insert
      case 4: s.resize(pos); break;                                       // truncate
      case 5: {                                                            // interesting msgpack bytes
        static const uint8_t kInteresting[] = {0xc0, 0xc1, 0xdc, 0xdd, 0xde, 0xdf, 0xff, 0x7f, 0x80, 0x90, 0xa0, 0xd9, 0xcf, 0xcb};
        s[pos] = static_cast<char>(kInteresting[rng() % sizeof kInteresting]);
        break;
      }
    }
  }
}

int run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(ProtocolFuzz, SeedsAreValid) {
  // The seeds themselves must parse as one of the two directions, or the mutations test little.
  for (const std::string& p : seed_payloads()) {
    const bool as_request = parse_request(p, ProtocolLimits{}).ok();
    const bool as_answer = parse_server_message(p).ok();
    EXPECT_TRUE(as_request || as_answer) << p.size();
  }
}

TEST(ProtocolFuzz, RandomBytes) {
  std::mt19937_64 rng(1);
  for (int k = 0; k < 20000; ++k) {
    std::string input(rng() % 300, '\0');
    for (char& c : input) c = static_cast<char>(rng());
    EXPECT_EQ(run(input), 0);
  }
}

TEST(ProtocolFuzz, MutatedValidFrames) {
  std::mt19937_64 rng(2);
  const std::vector<std::string> seeds = seed_payloads();
  for (int k = 0; k < 30000; ++k) {
    std::string input = framed_input(rng, seeds, 1 + static_cast<int>(rng() % 3));
    mutate(rng, input);
    EXPECT_EQ(run(input), 0);
  }
}

TEST(ProtocolFuzz, MutatedPayloadsWithValidLengthPrefix) {
  // Mutate inside the payload but keep the frame length right, so the parsers see the damage.
  std::mt19937_64 rng(3);
  const std::vector<std::string> seeds = seed_payloads();
  for (int k = 0; k < 30000; ++k) {
    std::string payload = seeds[rng() % seeds.size()];
    mutate(rng, payload);
    if (payload.empty()) continue;
    std::string input = {static_cast<char>(3), static_cast<char>(63)};
    append_frame(input, payload);
    EXPECT_EQ(run(input), 0);
  }
}

}  // namespace
}  // namespace vks::proto
