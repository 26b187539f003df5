#pragma once
// One pull, as `vkstream pull` and vkstreamd's `pull` requests both do it: a name (an http(s) URL of
// a GGUF or a Hugging Face OWNER/REPO[:QUANT], as parse_pull_source reads it) becomes a plan (the
// repository listing is fetched for a Hugging Face name) and a destination in the model cache; the
// file is then downloaded there (resumed from FILE.part, checked against size and sha256) unless a
// verified copy is there already.
#include <cstdint>
#include <string>

#include "store/downloader.h"
#include "store/pull_source.h"

namespace vks::store {

struct PullJob {
  PullSource source;
  PullPlan plan;
  std::string dest;  // cache_dir / plan.cache_name
};

// Parses `name` and plans its download into `cache_dir` (fetching a Hugging Face listing: network,
// at most a minute, stopped early when `cancel` becomes true). Throws vks::Error: kInvalidArgument
// for a name that is no source (saying what one looks like), kNotFound / kIo / kCorrupt from the
// listing, kCancelled.
PullJob plan_pull(const std::string& name, const std::string& cache_dir, const std::atomic<bool>* cancel = nullptr);

struct PullOutcome {
  std::string path;               // the file in the cache
  uint64_t size_bytes = 0;        // its size
  uint64_t downloaded_bytes = 0;  // fetched by this pull (0: it was cached and verified already)
};

// True when job.dest exists with the plan's size and sha256 (reads the whole file when a sha256 is known).
bool pulled_already(const PullJob& job);

// Downloads job.plan to job.dest unless pulled_already; options as download_file's (progress,
// cancel, what happens to FILE.part on failure). Throws what download_file throws.
PullOutcome run_pull(const PullJob& job, const DownloadOptions& options);

}  // namespace vks::store
