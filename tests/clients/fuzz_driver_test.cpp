// Drives the client-message fuzz target with random bytes and with mutations of real daemon
// messages (encoded by vks_protocol), so it runs in every build without clang.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "protocol/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> seed_messages() {
  using namespace vks::proto;
  std::vector<std::string> seeds;
  StreamEvent tok;
  tok.type = StreamEventType::kToken;
  tok.id = "0123456789abcdef0123456789abcdef";
  tok.seq = 5;
  tok.ids = {432, 383};
  tok.text = ", there \xc3\xa9";
  vks::proto::GeneratedToken g;
  g.id = 432;
  g.logprob = -0.5f;
  g.top = {{432, -0.5f}, {13, -1.5f}};
  tok.logprobs = {g, g};
  seeds.push_back(encode_event(tok));
  StreamEvent fin;
  fin.type = StreamEventType::kFinished;
  fin.id = tok.id;
  fin.seq = 6;
  fin.usage = {5, 0, 60};
  fin.timings = {0.5, 2.0, 30.0};
  seeds.push_back(encode_event(fin));
  ReplayAnswer replay;
  replay.id = tok.id;
  replay.events = {tok, fin};
  replay.next_seq = 7;
  replay.finished = true;
  seeds.push_back(encode_answer(replay, Tag::of(9)));
  HelloAnswer hello;
  hello.server = "vkstreamd test";
  hello.pub_endpoint = "ipc:///tmp/pub.zmq";
  seeds.push_back(encode_answer(hello, Tag::of(1)));
  seeds.push_back(encode_error(make_error(WireError::kInvalidField, "temperature must be >= 0", "temperature"),
                               Tag::of(2), "abc", 0));
  return seeds;
}

int run(const std::string& s) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

TEST(ClientsFuzzDriver, SeedsParse) {
  for (const std::string& s : seed_messages()) EXPECT_EQ(run(s), 0);
}

TEST(ClientsFuzzDriver, MutatedDaemonMessages) {
  std::mt19937_64 rng(20261121);
  const std::vector<std::string> seeds = seed_messages();
  for (int i = 0; i < 30000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0: s.resize(rng() % (s.size() + 1)); break;                        // truncate
      case 1: for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng()); break;  // flip bytes
      case 2: s.insert(rng() % (s.size() + 1), 1, static_cast<char>(rng())); break;  // insert
      default: s += seeds[rng() % seeds.size()]; break;                        // trailing message
    }
    ASSERT_EQ(run(s), 0);
  }
}

TEST(ClientsFuzzDriver, RandomBytes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    ASSERT_EQ(run(s), 0);
  }
}

}  // namespace
