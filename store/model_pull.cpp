#include "store/model_pull.h"

#include <filesystem>
#include <system_error>

#include "store/sha256.h"

namespace vks::store {
namespace fs = std::filesystem;

PullJob plan_pull(const std::string& name, const std::string& cache_dir, const std::atomic<bool>* cancel) {
  PullJob job;
  job.source = parse_pull_source(name);
  if (job.source.is_url) {
    job.plan = plan_for_url(job.source);
  } else {
    const std::string endpoint = hf_endpoint();
    const std::string listing =
        http_get_text(endpoint + "/api/models/" + job.source.owner + "/" + job.source.repo + "?blobs=true", 16 << 20, cancel);
    job.plan = plan_for_hf_listing(job.source, listing, endpoint);
  }
  job.dest = (fs::path(cache_dir) / job.plan.cache_name).string();
  return job;
}

bool pulled_already(const PullJob& job) {
  std::error_code ec;
  if (!fs::is_regular_file(job.dest, ec)) return false;
  if (job.plan.size_bytes && fs::file_size(job.dest, ec) != *job.plan.size_bytes) return false;
  return job.plan.sha256.empty() || sha256_file(job.dest) == job.plan.sha256;
}

PullOutcome run_pull(const PullJob& job, const DownloadOptions& options) {
  PullOutcome out;
  out.path = job.dest;
  if (!pulled_already(job)) out.downloaded_bytes = download_file(job.plan, job.dest, options);
  std::error_code ec;
  out.size_bytes = fs::file_size(job.dest, ec);
  return out;
}

}  // namespace vks::store
