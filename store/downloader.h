#pragma once
// HTTP transfers for `vkstream pull`, over libcurl: a small text GET (a repository listing) and a
// resumable file download into FILE.part (continued with a Range request when a previous transfer
// broke off), checked against the expected size and sha256 before it is renamed into place.
#include <string>

#include "store/pull_source.h"

namespace vks::store {

// GET a small text resource (at most max_bytes). Throws vks::Error: kIo when the host cannot be
// reached (saying so: offline?), kNotFound for HTTP 404, kIo for other HTTP errors.
std::string http_get_text(const std::string& url, size_t max_bytes = 16 << 20);

struct DownloadOptions {
  bool progress = false;  // a progress bar on stderr (a terminal)
};

// Downloads plan.url to `dest` via `dest`.part. Throws vks::Error: kIo for network failures (a
// broken transfer keeps the .part file and says to rerun to resume), kCorrupt for a size or sha256
// mismatch (the .part file is removed), kNotFound for HTTP 404.
void download_file(const PullPlan& plan, const std::string& dest, const DownloadOptions& options);

// "12.3 MiB" style sizes for progress and listings.
std::string human_size(uint64_t bytes);

}  // namespace vks::store
