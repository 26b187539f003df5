// with_catchup_mark: a catch-up event is the same msgpack map with one more entry, "catchup": true,
// whatever the map's header form (fixmap, map 16, map 32), and a payload that is not a map is
// left alone.
#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <map>
#include <string>

#include "server/catchup_mark.h"

namespace {

std::string map_of(size_t n) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    pk.pack("k" + std::to_string(i));
    pk.pack(static_cast<int64_t>(i));
  }
  return std::string(buf.data(), buf.size());
}

TEST(CatchupMark, AddsOneEntryToMapsOfEveryHeaderForm) {
  for (const size_t n : {size_t{0}, size_t{3}, size_t{14}, size_t{15}, size_t{16}, size_t{65534}, size_t{65535}}) {
    const std::string marked = vks::server::with_catchup_mark(map_of(n));
    const msgpack::object_handle h = msgpack::unpack(marked.data(), marked.size());
    ASSERT_EQ(h.get().type, msgpack::type::MAP) << n;
    const auto m = h.get().as<std::map<std::string, msgpack::object>>();
    ASSERT_EQ(m.size(), n + 1) << n;
    ASSERT_EQ(m.count("catchup"), 1u) << n;
    EXPECT_TRUE(m.at("catchup").as<bool>()) << n;
    if (n > 0) {
      EXPECT_EQ(m.at("k" + std::to_string(n - 1)).as<int64_t>(), static_cast<int64_t>(n - 1)) << n;
    }
  }
}

TEST(CatchupMark, LeavesWhatIsNotAMapAlone) {
  EXPECT_EQ(vks::server::with_catchup_mark(""), "");
  const std::string array = "\x92\x01\x02";
  EXPECT_EQ(vks::server::with_catchup_mark(array), array);
}

}  // namespace
