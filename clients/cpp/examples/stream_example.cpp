// Streams one generation from a running vkstreamd, first through the callback interface, then the
// same prompt through the iterator interface, and follows the second one's PUB topic as well.
//
//   stream_example [--socket PATH | --zmq ENDPOINT] "prompt"
//
// Build against an installed library:
//   g++ -std=c++20 stream_example.cpp $(pkg-config --cflags --libs vkstream-client)
#include <cstring>
#include <iostream>
#include <string>

#include "vkstream/client.h"

int main(int argc, char** argv) {
  vkstream::Endpoint endpoint = vkstream::default_endpoint();
  std::string prompt = "Once upon a time";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      endpoint.unix_socket = argv[++i];
    } else if (std::strcmp(argv[i], "--zmq") == 0 && i + 1 < argc) {
      endpoint.unix_socket.clear();
      endpoint.zmq_endpoint = argv[++i];
    } else if (std::strcmp(argv[i], "--pub") == 0 && i + 1 < argc) {
      endpoint.pub_endpoint = argv[++i];
    } else {
      prompt = argv[i];
    }
  }
  try {
    vkstream::Client client = vkstream::Client::connect(endpoint);
    const vkstream::Hello hello = client.hello();
    std::cout << "connected to " << hello.server << " (protocol " << hello.version << ")\n";

    vkstream::GenerateOptions options;
    options.prompt = prompt;
    options.temperature = 0;  // greedy
    options.max_tokens = 48;

    // 1. Callback interface: blocks until the request finishes.
    const vkstream::Completion done = client.generate(options, [](const vkstream::Event& ev) {
      if (ev.kind == vkstream::EventKind::kToken) std::cout << ev.text << std::flush;
    });
    std::cout << "\n[" << done.finish_reason << ", " << done.usage.generated_tokens << " tokens, TTFT "
              << done.timings.ttft_ms << " ms]\n";

    // 2. Iterator interface, plus a subscriber following the same request on the PUB socket.
    vkstream::Stream stream = client.stream(options);
    vkstream::Client control = vkstream::Client::connect(endpoint);
    vkstream::Subscriber follower = vkstream::follow(control, stream.id());
    std::string direct;
    for (const vkstream::Event& ev : stream) direct += ev.text;
    std::string followed;
    while (auto ev = follower.next()) followed += ev->text;
    std::cout << "iterator and subscriber " << (direct == followed ? "agree" : "DISAGREE") << ": " << direct << "\n";
    return direct == followed ? 0 : 1;
  } catch (const vkstream::ClientError& e) {
    std::cerr << "stream_example: " << e.what() << "\n";
    return 1;
  }
}
