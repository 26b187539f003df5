#pragma once
// What `vkstream pull SOURCE` downloads: SOURCE is an http(s) URL of a GGUF, or a Hugging Face
// `owner/repo[:quant]`, whose file is chosen from the repository listing
// ({endpoint}/api/models/owner/repo?blobs=true, which also gives each LFS file's size and sha256).
#include <cstdint>
#include <optional>
#include <string>

namespace vks::store {

struct PullSource {
  bool is_url = false;
  std::string url;    // is_url: the URL as given
  std::string owner;  // Hugging Face
  std::string repo;
  std::string quant;  // may be empty: pick Q4_K_M, or the only GGUF
};

// Ollama's hf.co/OWNER/REPO[:QUANT] (or huggingface.co/...) is read as OWNER/REPO[:QUANT], its
// ":latest" as no quant. Throws vks::Error (kInvalidArgument) with what a valid SOURCE looks like.
PullSource parse_pull_source(const std::string& source);

// One file to fetch and where it goes in the cache.
struct PullPlan {
  std::string url;
  std::string cache_name;  // relative to the cache dir: "owner/repo/file.gguf" or "file.gguf"
  std::optional<uint64_t> size_bytes;
  std::string sha256;  // lower-case hex, empty when unknown
};

// The Hugging Face endpoint: $VKSTREAM_HF_ENDPOINT, else https://huggingface.co (no trailing slash).
std::string hf_endpoint();

// The plan for a URL source (file name from the URL's last path segment).
PullPlan plan_for_url(const PullSource& source);

// Chooses the GGUF from the JSON listing of a Hugging Face repository. Throws vks::Error: kCorrupt
// for a listing that is not the expected JSON, kNotFound when no GGUF matches (naming the quants
// there are), kInvalidArgument when several match.
PullPlan plan_for_hf_listing(const PullSource& source, const std::string& listing_json, const std::string& endpoint);

}  // namespace vks::store
