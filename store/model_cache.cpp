#include "store/model_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "engine/common/error.h"

namespace vks::store {
namespace fs = std::filesystem;
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool regular_file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::string model_cache_dir() {
  if (std::string dir = env_or_empty("VKSTREAM_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/vkstream/models";
  if (std::string home = env_or_empty("HOME"); !home.empty()) return home + "/.cache/vkstream/models";
  throw Error(ErrorCode::kNotFound, "no model cache directory: set XDG_CACHE_HOME or HOME");
}

std::vector<CachedModel> list_cached_models(const std::string& cache_dir) {
  std::vector<CachedModel> models;
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) return models;
  for (fs::recursive_directory_iterator it(cache_dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".gguf") continue;
    CachedModel m;
    m.path = it->path().string();
    m.name = it->path().lexically_relative(cache_dir).string();
    m.size_bytes = it->file_size(ec);
    models.push_back(std::move(m));
  }
  std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) { return a.name < b.name; });
  return models;
}

bool file_has_quant(const std::string& file_name, const std::string& quant) {
  if (quant.empty()) return false;
  const std::string f = lower(file_name), q = lower(quant);
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = f.find(q); pos != std::string::npos; pos = f.find(q, pos + 1)) {
    const bool starts = pos == 0 || !std::isalnum(static_cast<unsigned char>(f[pos - 1]));
    const size_t after = pos + q.size();
    const bool ends = after == f.size() || !is_word(f[after]);
    if (starts && ends) return true;
  }
  return false;
}

std::optional<std::string> resolve_model_name(const std::string& name, const std::string& cache_dir) {
  if (name.empty()) return std::nullopt;
  if (regular_file_exists(name)) return name;
  if (cache_dir.empty() || name.find("..") != std::string::npos) return std::nullopt;
  for (const std::string& candidate : {name, name + ".gguf"}) {
    if (regular_file_exists(fs::path(cache_dir) / candidate)) return (fs::path(cache_dir) / candidate).string();
  }
  // owner/repo[:quant] as given to `vkstream pull`.
  const size_t colon = name.find(':');
  const std::string repo = name.substr(0, colon);
  const std::string quant = colon == std::string::npos ? "" : name.substr(colon + 1);
  if (std::count(repo.begin(), repo.end(), '/') != 1) return std::nullopt;
  std::vector<CachedModel> matches;
  for (CachedModel& m : list_cached_models((fs::path(cache_dir) / repo).string())) {
    if (m.name.find('/') != std::string::npos) continue;
    if (quant.empty() || file_has_quant(m.name, quant)) matches.push_back(std::move(m));
  }
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) {
    std::string names;
    for (const CachedModel& m : matches) names += (names.empty() ? "" : ", ") + m.name;
    throw Error(ErrorCode::kInvalidArgument, name + " matches several cached files (" + names +
                                                 "); add :QUANT or give the file name");
  }
  return matches.front().path;
}

std::string resolve_model_or_path(const std::string& name) {
  std::string cache_dir;
  try {
    cache_dir = model_cache_dir();
  } catch (const Error&) {
    return name;
  }
  return resolve_model_name(name, cache_dir).value_or(name);
}

}  // namespace vks::store
