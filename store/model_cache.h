#pragma once
// The user's model cache: where `vkstream pull` puts GGUFs, what `vkstream models` lists, and how a
// name given to `--model` (a path, a cached file name, or the `owner/repo[:quant]` it was pulled as)
// becomes a file path.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vks::store {

// $VKSTREAM_CACHE_DIR, else $XDG_CACHE_HOME/vkstream/models, else $HOME/.cache/vkstream/models.
// Throws vks::Error (kNotFound) when none of them is set.
std::string model_cache_dir();

struct CachedModel {
  std::string name;  // path relative to the cache dir, e.g. "owner/repo/file.Q4_K_M.gguf"
  std::string path;
  uint64_t size_bytes = 0;
};

// Every *.gguf under the cache dir (partial downloads excluded), sorted by name. Empty when the dir
// does not exist.
std::vector<CachedModel> list_cached_models(const std::string& cache_dir);

// True when `file_name` carries the quantization tag `quant` (case-insensitive) as a whole word:
// "Q4_K" matches "x.Q4_K.gguf" but not "x.Q4_K_M.gguf".
bool file_has_quant(const std::string& file_name, const std::string& quant);

// `name` as given to --model: an existing file is used as is; otherwise the cache is searched for
// NAME, NAME.gguf, or a pulled `owner/repo[:quant]`. nullopt when nothing matches.
// Throws vks::Error (kInvalidArgument) when `owner/repo` without a quant matches several files.
std::optional<std::string> resolve_model_name(const std::string& name, const std::string& cache_dir);

// resolve_model_name with the default cache dir; returns `name` unchanged when nothing matches (so
// the loader reports the missing file) or when no cache dir can be determined.
std::string resolve_model_or_path(const std::string& name);

}  // namespace vks::store
