// libFuzzer target over what the client library parses from the daemon: one msgpack payload →
// Value → Event, and Value → JSON. Build with clang and -fsanitize=fuzzer (VKS_LIBFUZZER=ON) to
// fuzz; the ctest clients_fuzz_driver runs it on random and mutated daemon messages without clang.
//
// Invariants (abort on violation): only ClientError(kProtocol) is thrown for bad input; a payload
// that parses re-packs to bytes
// that parse and re-pack to the same bytes; the parsed event keeps the whole message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "clients/cpp/src/wire.h"
#include "vkstream/errors.h"
#include "vkstream/types.h"

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_client_messages invariant failed: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  vkstream::Value v;
  try {
    v = vkstream::detail::unpack_value(payload);
  } catch (const vkstream::ClientError& e) {
    check(e.kind() == vkstream::ErrorKind::kProtocol, "bad input raised a non-protocol error");
    return 0;
  }
  const std::string json = v.to_json();
  // msgpack-cxx packs integral doubles as integers, so compare after one round trip.
  const std::string packed = vkstream::detail::pack_value(v);
  const vkstream::Value again = vkstream::detail::unpack_value(packed);
  check(vkstream::detail::pack_value(again) == packed, "re-packed message is not stable");
  if (v.is_map()) {
    const vkstream::Event ev = vkstream::parse_event(v);
    check(ev.raw.to_json() == json, "event lost its raw message");
  }
  return 0;
}
