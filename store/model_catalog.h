#pragma once
// The catalogue of servable models: the GGUFs a daemon can load by name, found in the model
// directories it was given and in the `vkstream pull` cache, each under the name a user would type.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vks::store {

struct CatalogModel {
  std::string name;  // "stories260K" (a dir's file stem), "owner/repo:Q4_K_M" or "owner/repo/file" (pulled)
  std::string path;
  uint64_t size_bytes = 0;
  int64_t mtime_unix = 0;  // seconds; lets a daemon notice a file replaced under the same name
  bool pulled = false;     // from the pull cache rather than a model dir
};

// Every *.gguf directly in each of `dirs` (named by its file stem) and every complete download in the
// pull cache `cache_dir` (named as `vkstream pull` was given it: `owner/repo:QUANT` when the file
// name carries a quant tag that picks it alone in its repo, else `owner/repo/file-stem`; files pulled
// from a URL by their stem). The first occurrence of a name wins (dirs in order, then the cache);
// the result is sorted by name. Missing or unreadable dirs are skipped; never throws for them.
std::vector<CatalogModel> scan_servable_models(const std::vector<std::string>& dirs, const std::string& cache_dir);

// One GGUF as a model dir lists it: named by its file stem, with its size and mtime (0 when it
// cannot be read: its load then says why).
CatalogModel catalog_model_of(const std::string& path);

// The model `requested` names, case-sensitively: its exact name first, then NAME:latest, then the
// file name or path, and for pulled models the forms resolve_model_name accepts (the cache-relative
// file with or without .gguf, `owner/repo:QUANT`, `owner/repo` when the repo holds one model).
// nullopt when nothing matches or when a looser form matches several models (ambiguous).
std::optional<CatalogModel> find_servable_model(const std::vector<CatalogModel>& catalog, const std::string& requested);

}  // namespace vks::store
