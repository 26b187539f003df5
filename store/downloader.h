#pragma once
// HTTP transfers for `vkstream pull`, over libcurl: a small text GET (a repository listing) and a
// resumable file download into FILE.part (continued with a Range request when a previous transfer
// broke off), checked against the expected size and sha256 before it is renamed into place.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "store/pull_source.h"

namespace vks::store {

// GET a small text resource (at most max_bytes). Throws vks::Error: kIo when the host cannot be
// reached (saying so: offline?), kNotFound for HTTP 404, kIo for other HTTP errors, kCancelled
// when `cancel` (read during the transfer) became true.
std::string http_get_text(const std::string& url, size_t max_bytes = 16 << 20, const std::atomic<bool>* cancel = nullptr);

// What is left of FILE.part after a failed download.
enum class PartialFile {
  kKeep,             // kept whenever it holds bytes: the same pull continues it (vkstream pull)
  kKeepIfResumable,  // kept only after a broken transfer or a cancel (a retry continues it);
                     // removed after an HTTP error or a write failure (vkstreamd)
};

struct DownloadOptions {
  bool progress = false;  // a progress bar on stderr (a terminal)
  // Called on the downloading thread, at most every 100 ms and once at the end, with the bytes in
  // FILE.part so far and the expected total (0: unknown). Must not throw.
  std::function<void(uint64_t done, uint64_t total)> on_progress;
  // Read on the downloading thread during the transfer: once true, the transfer stops (kCancelled).
  const std::atomic<bool>* cancel = nullptr;
  PartialFile partial = PartialFile::kKeep;
};

// Downloads plan.url to `dest` via `dest`.part and returns how many bytes this call fetched (a
// resumed download fetches the rest only). Throws vks::Error: kIo for network failures (a broken
// transfer keeps the .part file and says to rerun to resume), kCorrupt for a size or sha256
// mismatch (the .part file is removed), kNotFound for HTTP 404, kCancelled when options.cancel
// stopped it (the .part file is kept).
uint64_t download_file(const PullPlan& plan, const std::string& dest, const DownloadOptions& options);

// "12.3 MiB" style sizes for progress and listings.
std::string human_size(uint64_t bytes);

}  // namespace vks::store
