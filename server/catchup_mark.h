#pragma once
// A late subscriber's catch-up is re-published on the request's topic (XPUB cannot address one
// subscriber), so a firehose subscriber of the `vks.` prefix receives those events a second time.
// Re-published events carry `"catchup": true` (docs/PROTOCOL.md 2.3): prefix subscribers drop
// them; the subscriber that asked keeps them (unknown keys are ignored by every parser).
#include <string>
#include <string_view>

namespace vks::server {

// The msgpack map `event` with one more entry, "catchup": true. A payload that is not a map is
// returned unchanged.
std::string with_catchup_mark(std::string_view event);

}  // namespace vks::server
