#include "store/pull_source.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <vector>

#include "engine/common/error.h"
#include "store/model_cache.h"

namespace vks::store {
namespace {

constexpr const char* kSourceForms =
    "expected an http(s):// URL of a .gguf file or a Hugging Face OWNER/REPO[:QUANT], e.g. "
    "TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF:Q4_K_M";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool ends_with_gguf(const std::string& s) {
  if (s.size() < 5) return false;
  std::string tail = s.substr(s.size() - 5);
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == ".gguf";
}

// Hugging Face names: letters, digits, '-', '_', '.'; no "..".
bool valid_hf_name(const std::string& s) {
  if (s.empty() || s.size() > 96 || s.find("..") != std::string::npos || s[0] == '.') return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A file name safe to create in the cache: no path separators, not hidden.
bool safe_file_name(const std::string& s) {
  return !s.empty() && s[0] != '.' && s.find('/') == std::string::npos && s.find('\\') == std::string::npos &&
         s.find('\0') == std::string::npos && s.size() <= 255;
}

// The quant tag of a file name such as "tinyllama.Q4_K_M.gguf" (text between the last '.' or '-'
// before ".gguf" and ".gguf"), for listing the choices.
std::string quant_tag(const std::string& file) {
  const std::string stem = file.substr(0, file.size() - 5);
  const size_t cut = stem.find_last_of(".-");
  return cut == std::string::npos ? stem : stem.substr(cut + 1);
}

}  // namespace

PullSource parse_pull_source(const std::string& source) {
  PullSource s;
  if (starts_with(source, "http://") || starts_with(source, "https://")) {
    s.is_url = true;
    s.url = source;
    return s;
  }
  // Ollama's spelling of a Hugging Face model: hf.co/OWNER/REPO[:QUANT], ":latest" for the default.
  std::string name = source;
  for (const char* prefix : {"hf.co/", "huggingface.co/"}) {
    if (starts_with(name, prefix)) name = name.substr(std::string(prefix).size());
  }
  if (name.size() > 7 && name.ends_with(":latest") && name != source) name.resize(name.size() - 7);
  const size_t colon = name.find(':');
  const std::string repo_part = name.substr(0, colon);
  s.quant = colon == std::string::npos ? "" : name.substr(colon + 1);
  const size_t slash = repo_part.find('/');
  if (slash == std::string::npos || repo_part.find('/', slash + 1) != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, "bad source '" + source + "': " + kSourceForms);
  }
  s.owner = repo_part.substr(0, slash);
  s.repo = repo_part.substr(slash + 1);
  if (!valid_hf_name(s.owner) || !valid_hf_name(s.repo) ||
      (colon != std::string::npos && (s.quant.empty() || !valid_hf_name(s.quant)))) {
    throw Error(ErrorCode::kInvalidArgument, "bad source '" + source + "': " + kSourceForms);
  }
  return s;
}

std::string hf_endpoint() {
  const char* env = std::getenv("VKSTREAM_HF_ENDPOINT");
  std::string e = env && *env ? env : "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

PullPlan plan_for_url(const PullSource& source) {
  std::string path = source.url.substr(0, source.url.find_first_of("?#"));
  const size_t scheme_end = path.find("://");
  const size_t last_slash = path.rfind('/');
  std::string file = last_slash == std::string::npos || last_slash < scheme_end + 3 ? "" : path.substr(last_slash + 1);
  if (!safe_file_name(file) || !ends_with_gguf(file)) {
    throw Error(ErrorCode::kInvalidArgument, "the URL '" + source.url + "' does not name a .gguf file");
  }
  PullPlan plan;
  plan.url = source.url;
  plan.cache_name = file;
  return plan;
}

PullPlan plan_for_hf_listing(const PullSource& source, const std::string& listing_json, const std::string& endpoint) {
  const std::string repo_id = source.owner + "/" + source.repo;
  const nlohmann::json listing = nlohmann::json::parse(listing_json, nullptr, /*allow_exceptions=*/false);
  if (!listing.is_object() || !listing.contains("siblings") || !listing["siblings"].is_array()) {
    throw Error(ErrorCode::kCorrupt, "the Hugging Face listing of " + repo_id + " is not the expected JSON (no siblings)");
  }
  struct Candidate {
    std::string file;
    std::optional<uint64_t> size;
    std::string sha256;
  };
  std::vector<Candidate> ggufs;
  for (const nlohmann::json& sib : listing["siblings"]) {
    if (!sib.is_object() || !sib.contains("rfilename") || !sib["rfilename"].is_string()) continue;
    Candidate c;
    c.file = sib["rfilename"].get<std::string>();
    if (!ends_with_gguf(c.file) || !safe_file_name(c.file)) continue;  // files in subfolders are skipped
    const nlohmann::json* lfs = sib.contains("lfs") && sib["lfs"].is_object() ? &sib["lfs"] : nullptr;
    if (lfs && lfs->contains("size") && (*lfs)["size"].is_number_unsigned()) c.size = (*lfs)["size"].get<uint64_t>();
    else if (sib.contains("size") && sib["size"].is_number_unsigned()) c.size = sib["size"].get<uint64_t>();
    if (lfs && lfs->contains("sha256") && (*lfs)["sha256"].is_string()) {
      c.sha256 = (*lfs)["sha256"].get<std::string>();
      bool hex = c.sha256.size() == 64;
      for (char& ch : c.sha256) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        hex = hex && std::isxdigit(static_cast<unsigned char>(ch));
      }
      if (!hex) c.sha256.clear();
    }
    ggufs.push_back(std::move(c));
  }
  if (ggufs.empty()) throw Error(ErrorCode::kNotFound, repo_id + " has no .gguf file");
  std::string quants;
  for (const Candidate& c : ggufs) quants += (quants.empty() ? "" : ", ") + quant_tag(c.file);

  std::vector<const Candidate*> picked;
  const std::string wanted = source.quant.empty() ? "Q4_K_M" : source.quant;
  for (const Candidate& c : ggufs) {
    if (file_has_quant(c.file, wanted)) picked.push_back(&c);
  }
  if (picked.empty() && source.quant.empty() && ggufs.size() == 1) picked.push_back(&ggufs.front());
  if (picked.empty()) {
    throw Error(ErrorCode::kNotFound, repo_id + " has no " + wanted + " GGUF" + (source.quant.empty() ? " (the default)" : "") +
                                          "; it has: " + quants + " (pull " + repo_id + ":QUANT)");
  }
  if (picked.size() > 1) {
    std::string names;
    for (const Candidate* c : picked) names += (names.empty() ? "" : ", ") + c->file;
    throw Error(ErrorCode::kInvalidArgument,
                repo_id + ":" + wanted + " matches several files (" + names + "); split GGUFs are not supported");
  }
  PullPlan plan;
  plan.url = endpoint + "/" + repo_id + "/resolve/main/" + picked.front()->file;
  plan.cache_name = repo_id + "/" + picked.front()->file;
  plan.size_bytes = picked.front()->size;
  plan.sha256 = picked.front()->sha256;
  return plan;
}

}  // namespace vks::store
