#include "store/model_catalog.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <set>
#include <system_error>

#include "store/model_cache.h"

namespace vks::store {
namespace fs = std::filesystem;
namespace {

constexpr const char* kGguf = ".gguf";

int64_t mtime_unix(const fs::path& p) {
  std::error_code ec;
  const fs::file_time_type t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
}

// The quant tag a pulled file name carries ("m.Q4_K_M.gguf" -> "Q4_K_M"): the text after the last
// '.' or '-' of the stem when it looks like a llama.cpp quant type (Q8_0, IQ4_XS, F16, BF16...).
std::string quant_tag(const std::string& file) {
  const std::string stem = file.substr(0, file.size() - 5);
  const size_t cut = stem.find_last_of(".-");
  if (cut == std::string::npos) return "";
  const std::string tag = stem.substr(cut + 1);
  std::string up;
  for (char c : tag) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up == "F16" || up == "F32" || up == "BF16") return tag;
  const size_t q = up.rfind("IQ", 0) == 0 ? 2 : (up.rfind('Q', 0) == 0 ? 1 : std::string::npos);
  if (q == std::string::npos || q >= up.size() || !std::isdigit(static_cast<unsigned char>(up[q]))) return "";
  for (char c : up) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
  }
  return tag;
}

void scan_dir(const std::string& dir, std::vector<CatalogModel>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code file_ec;
    if (it->path().extension() != kGguf || !it->is_regular_file(file_ec)) continue;
    out.push_back(catalog_model_of(it->path().string()));
  }
}

// Names a cached file as `vkstream pull` was given it. `siblings` are the complete GGUFs of its repo
// dir, so a quant tag two files share falls back to the unambiguous file-stem name.
std::string pulled_name(const std::string& relative, const std::vector<std::string>& siblings) {
  const std::string stem_name = relative.substr(0, relative.size() - 5);
  if (std::count(relative.begin(), relative.end(), '/') != 2) return stem_name;  // a URL pull or another layout
  const size_t last = relative.rfind('/');
  const std::string file = relative.substr(last + 1);
  const std::string tag = quant_tag(file);
  if (tag.empty()) return stem_name;
  // resolve_model_name matches quants case-insensitively; the tag must pick this file alone there too.
  const auto same_quant = [&](const std::string& s) { return file_has_quant(s, tag); };
  if (std::count_if(siblings.begin(), siblings.end(), same_quant) != 1) return stem_name;
  return relative.substr(0, last) + ":" + tag;
}

void scan_cache(const std::string& cache_dir, std::vector<CatalogModel>& out) {
  if (cache_dir.empty()) return;
  const std::vector<CachedModel> cached = list_cached_models(cache_dir);  // skips .part downloads
  for (const CachedModel& c : cached) {
    std::vector<std::string> siblings;
    const std::string repo_dir = c.name.substr(0, c.name.rfind('/') + 1);
    for (const CachedModel& s : cached) {
      if (s.name.rfind(repo_dir, 0) == 0 && s.name.find('/', repo_dir.size()) == std::string::npos) {
        siblings.push_back(s.name.substr(repo_dir.size()));
      }
    }
    CatalogModel m;
    m.name = pulled_name(c.name, siblings);
    m.path = c.path;
    m.size_bytes = c.size_bytes;
    m.mtime_unix = mtime_unix(c.path);
    m.pulled = true;
    out.push_back(std::move(m));
  }
}

// The repo ("owner/repo") of a pulled model, from the name scan_cache gave it; empty for URL pulls.
std::string pulled_repo(const CatalogModel& m) {
  if (const size_t colon = m.name.find(':'); colon != std::string::npos) return m.name.substr(0, colon);
  if (std::count(m.name.begin(), m.name.end(), '/') == 2) return m.name.substr(0, m.name.rfind('/'));
  return "";
}

// The looser names of `m`: its file name and path, and for pulled models the cache-relative file with
// and without .gguf and `owner/repo:QUANT` (the repo-wide forms are checked by the caller).
bool matches_loosely(const CatalogModel& m, const std::string& requested) {
  const std::string file = fs::path(m.path).filename().string();
  if (requested == file || requested == m.path) return true;
  if (!m.pulled) return false;
  const std::string repo = pulled_repo(m);
  const std::string relative = repo.empty() ? file : repo + "/" + file;
  if (requested == relative || requested + kGguf == relative) return true;
  const size_t colon = requested.find(':');
  return !repo.empty() && colon != std::string::npos && requested.substr(0, colon) == repo &&
         file_has_quant(file, requested.substr(colon + 1));  // any case, as `vkstream pull` and --model read it
}

}  // namespace

CatalogModel catalog_model_of(const std::string& path) {
  const fs::path p(path);
  CatalogModel m;
  m.name = p.extension() == kGguf ? p.stem().string() : p.filename().string();
  m.path = path;
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  m.size_bytes = ec ? 0 : static_cast<uint64_t>(size);
  m.mtime_unix = mtime_unix(p);
  return m;
}

std::vector<CatalogModel> scan_servable_models(const std::vector<std::string>& dirs, const std::string& cache_dir) {
  std::vector<CatalogModel> found;
  for (const std::string& dir : dirs) scan_dir(dir, found);
  scan_cache(cache_dir, found);
  // Names are unique within one source (a dir's stems, the cache's paths), so which copy wins depends
  // only on the order of the sources, not on the unspecified order of a directory listing.
  std::vector<CatalogModel> unique;
  std::set<std::string> seen;
  for (CatalogModel& m : found) {
    if (seen.insert(m.name).second) unique.push_back(std::move(m));
  }
  std::sort(unique.begin(), unique.end(), [](const CatalogModel& a, const CatalogModel& b) { return a.name < b.name; });
  return unique;
}

std::optional<CatalogModel> find_servable_model(const std::vector<CatalogModel>& catalog, const std::string& requested) {
  if (requested.empty()) return std::nullopt;
  // Exact first, then NAME:latest (the tag Ollama-style clients add to a bare name).
  for (const CatalogModel& m : catalog) {
    if (m.name == requested) return m;
  }
  for (const CatalogModel& m : catalog) {
    if (m.name + ":latest" == requested) return m;
  }
  // "owner/repo:latest" means the repo's only model, as a plain "owner/repo" does.
  const std::string bare = requested.ends_with(":latest") ? requested.substr(0, requested.size() - 7) : requested;
  std::vector<const CatalogModel*> hits;
  for (const CatalogModel& m : catalog) {
    if (matches_loosely(m, requested) || (m.pulled && !pulled_repo(m).empty() && pulled_repo(m) == bare)) {
      hits.push_back(&m);
    }
  }
  if (hits.size() != 1) return std::nullopt;
  return *hits.front();
}

}  // namespace vks::store
