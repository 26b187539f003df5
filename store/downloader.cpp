#include "store/downloader.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "engine/common/error.h"
#include "store/sha256.h"

namespace vks::store {
namespace fs = std::filesystem;
namespace {

void ensure_curl_initialized() {
  static const bool initialized = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  if (!initialized) throw Error(ErrorCode::kInternal, "libcurl failed to initialize");
}

using CurlHandle = std::unique_ptr<CURL, void (*)(CURL*)>;
using HeaderList = std::unique_ptr<curl_slist, void (*)(curl_slist*)>;

CurlHandle new_handle(const std::string& url) {
  ensure_curl_initialized();
  CurlHandle h(curl_easy_init(), &curl_easy_cleanup);
  if (!h) throw Error(ErrorCode::kInternal, "libcurl: cannot create a transfer");
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT, 15L);
  // A transfer that delivers nothing for a minute is dead; curl then reports a timeout.
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(h.get(), CURLOPT_USERAGENT, "vkstream-pull/1");
  curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  return h;
}

// Hugging Face's gated and private repositories need a token.
HeaderList auth_headers() {
  HeaderList list(nullptr, &curl_slist_free_all);
  if (const char* token = std::getenv("HF_TOKEN"); token && *token) {
    list.reset(curl_slist_append(nullptr, ("Authorization: Bearer " + std::string(token)).c_str()));
  }
  return list;
}

std::string host_of(const std::string& url) {
  const size_t start = url.find("://");
  const size_t from = start == std::string::npos ? 0 : start + 3;
  return url.substr(from, url.find_first_of("/?#", from) - from);
}

[[noreturn]] void throw_transfer_error(CURLcode rc, const std::string& url, const char* detail) {
  const std::string why = detail && *detail ? detail : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      throw Error(ErrorCode::kIo, "cannot reach " + host_of(url) + " (" + why + "): are you offline?");
    default:
      throw Error(ErrorCode::kIo, "download of " + url + " failed: " + why);
  }
}

[[noreturn]] void throw_http_error(long status, const std::string& url) {
  if (status == 404) throw Error(ErrorCode::kNotFound, url + " was not found (HTTP 404)");
  if (status == 401 || status == 403) {
    throw Error(ErrorCode::kIo, url + ": access denied (HTTP " + std::to_string(status) +
                                    "); a gated or private repository needs HF_TOKEN set");
  }
  throw Error(ErrorCode::kIo, url + ": HTTP " + std::to_string(status));
}

struct TextSink {
  std::string text;
  size_t max_bytes;
  bool too_large = false;
};

size_t append_text(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<TextSink*>(user);
  if (sink->text.size() + size * n > sink->max_bytes) {
    sink->too_large = true;
    return 0;
  }
  sink->text.append(data, size * n);
  return size * n;
}

// Writes the body into FILE.part. When a resumed request is answered with the whole file (HTTP
// 200 instead of 206), the partial file is truncated and the body written from the start.
struct FileSink {
  FILE* file = nullptr;
  CURL* curl = nullptr;
  uint64_t resume_from = 0;
  bool checked_status = false;
  bool io_error = false;
  uint64_t written = 0;
};

size_t write_file(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<FileSink*>(user);
  if (!sink->checked_status) {
    sink->checked_status = true;
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 400) return 0;  // reported from the status after curl_easy_perform
    if (sink->resume_from > 0 && status == 200) {
      if (std::fflush(sink->file) != 0 || ::ftruncate(fileno(sink->file), 0) != 0 || std::fseek(sink->file, 0, SEEK_SET) != 0) {
        sink->io_error = true;
        return 0;
      }
      sink->resume_from = 0;
    }
  }
  if (std::fwrite(data, size, n, sink->file) != n) {
    sink->io_error = true;
    return 0;
  }
  sink->written += size * n;
  return size * n;
}

struct Progress {
  uint64_t resume_from = 0;
  std::optional<uint64_t> expected;
  bool draw = false;  // the terminal bar
  const DownloadOptions* options = nullptr;
  bool cancelled = false;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw{};

  uint64_t total(curl_off_t dltotal) const {
    return expected ? *expected : dltotal > 0 ? resume_from + static_cast<uint64_t>(dltotal) : 0;
  }
};

void draw_bar(const Progress& p, uint64_t done, uint64_t total, curl_off_t dlnow,
              std::chrono::steady_clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - p.started).count();
  const double rate = seconds > 0 ? static_cast<double>(dlnow) / seconds : 0.0;
  constexpr int kWidth = 30;
  if (total > 0) {
    const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r[%.*s%*s] %3d%% %s / %s  %s/s   ", filled, "##############################",
                 kWidth - filled, "", static_cast<int>(frac * 100), human_size(done).c_str(), human_size(total).c_str(),
                 human_size(static_cast<uint64_t>(rate)).c_str());
  } else {
    std::fprintf(stderr, "\r%s  %s/s   ", human_size(done).c_str(), human_size(static_cast<uint64_t>(rate)).c_str());
  }
  std::fflush(stderr);
}

// libcurl's XFERINFOFUNCTION: the bar, the caller's progress callback, and the cancel flag (a
// non-zero return stops the transfer with CURLE_ABORTED_BY_CALLBACK).
int on_transfer_info(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* p = static_cast<Progress*>(user);
  if (p->options->cancel != nullptr && p->options->cancel->load(std::memory_order_relaxed)) {
    p->cancelled = true;
    return 1;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - p->last_draw < std::chrono::milliseconds(100)) return 0;
  p->last_draw = now;
  const uint64_t done = p->resume_from + static_cast<uint64_t>(dlnow);
  const uint64_t total = p->total(dltotal);
  if (p->draw) draw_bar(*p, done, total, dlnow, now);
  if (p->options->on_progress) p->options->on_progress(done, total);
  return 0;
}

uint64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

}  // namespace

std::string human_size(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

namespace {

// XFERINFOFUNCTION of a transfer that only needs stopping.
int stop_when_cancelled(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(user)->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

std::string http_get_text(const std::string& url, size_t max_bytes, const std::atomic<bool>* cancel) {
  CurlHandle h = new_handle(url);
  HeaderList headers = auth_headers();
  if (headers) curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  char error_buf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error_buf);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT, 60L);
  TextSink sink{{}, max_bytes};
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &append_text);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &sink);
  if (cancel != nullptr) {
    curl_easy_setopt(h.get(), CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h.get(), CURLOPT_XFERINFOFUNCTION, &stop_when_cancelled);
    curl_easy_setopt(h.get(), CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  }
  const CURLcode rc = curl_easy_perform(h.get());
  if (cancel != nullptr && cancel->load()) throw Error(ErrorCode::kCancelled, "the request for " + url + " was cancelled");
  long status = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400) throw_http_error(status, url);
  if (sink.too_large) throw Error(ErrorCode::kCorrupt, url + ": answer larger than " + human_size(max_bytes));
  if (rc != CURLE_OK) throw_transfer_error(rc, url, error_buf);
  return std::move(sink.text);
}

uint64_t download_file(const PullPlan& plan, const std::string& dest, const DownloadOptions& options) {
  const std::string part = dest + ".part";
  std::error_code ec;
  fs::create_directories(fs::path(dest).parent_path(), ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot create " + fs::path(dest).parent_path().string() + ": " + ec.message());

  uint64_t resume_from = file_size_or_zero(part);
  if (plan.size_bytes && resume_from > *plan.size_bytes) resume_from = 0;  // not a prefix of this file
  const bool already_complete = plan.size_bytes && resume_from == *plan.size_bytes && resume_from > 0;
  uint64_t fetched = 0;

  if (!already_complete) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(part.c_str(), resume_from > 0 ? "ab" : "wb"), &std::fclose);
    if (!file) throw Error(ErrorCode::kIo, "cannot write " + part + ": " + std::strerror(errno));
    CurlHandle h = new_handle(plan.url);
    HeaderList headers = auth_headers();
    if (headers) curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
    char error_buf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error_buf);
    FileSink sink;
    sink.file = file.get();
    sink.curl = h.get();
    sink.resume_from = resume_from;
    curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &write_file);
    curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &sink);
    // CURLOPT_RANGE rather than RESUME_FROM: a server that ignores ranges answers 200 with the whole
    // file, which write_file then takes from the start instead of failing.
    const std::string range = std::to_string(resume_from) + "-";
    if (resume_from > 0) curl_easy_setopt(h.get(), CURLOPT_RANGE, range.c_str());
    Progress progress;
    progress.resume_from = resume_from;
    progress.expected = plan.size_bytes;
    progress.draw = options.progress;
    progress.options = &options;
    if (options.progress || options.on_progress || options.cancel != nullptr) {
      curl_easy_setopt(h.get(), CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(h.get(), CURLOPT_XFERINFOFUNCTION, &on_transfer_info);
      curl_easy_setopt(h.get(), CURLOPT_XFERINFODATA, &progress);
    }
    const CURLcode rc = curl_easy_perform(h.get());
    if (options.progress) std::fputs("\n", stderr);
    long status = 0;
    curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
    const bool flushed = std::fflush(file.get()) == 0;
    file.reset();
    if (status == 416 && resume_from > 0) {
      // The server cannot continue this partial file (it changed, or is complete but of unknown
      // size): start over.
      fs::remove(part, ec);
      return download_file(plan, dest, options);
    }
    fetched = sink.written;
    // A failure before any byte arrived leaves no empty .part behind (one with bytes is kept for
    // resuming, unless options.partial says to keep only what a retry can continue).
    const bool failed = status >= 400 || sink.io_error || !flushed || rc != CURLE_OK;
    const bool resumable = status < 400 && !sink.io_error && flushed;
    if (failed && (file_size_or_zero(part) == 0 || (options.partial == PartialFile::kKeepIfResumable && !resumable))) {
      fs::remove(part, ec);
    }
    if (status >= 400) throw_http_error(status, plan.url);
    if (sink.io_error || !flushed) throw Error(ErrorCode::kIo, "cannot write " + part + ": " + std::strerror(errno));
    if (progress.cancelled) {
      throw Error(ErrorCode::kCancelled, "the download of " + plan.url + " was cancelled after " +
                                             human_size(file_size_or_zero(part)) + "; pull again to resume");
    }
    if (rc != CURLE_OK) {
      const uint64_t have = file_size_or_zero(part);
      if (have > 0) {
        throw Error(ErrorCode::kIo, "the download broke off after " + human_size(have) +
                                        (plan.size_bytes ? " of " + human_size(*plan.size_bytes) : std::string()) + " (" +
                                        (error_buf[0] ? std::string(error_buf) : curl_easy_strerror(rc)) +
                                        "); run the same pull again to resume");
      }
      throw_transfer_error(rc, plan.url, error_buf);
    }
  }

  const uint64_t got = file_size_or_zero(part);
  if (plan.size_bytes && got != *plan.size_bytes) {
    fs::remove(part, ec);
    throw Error(ErrorCode::kCorrupt, "size mismatch for " + plan.url + ": expected " + std::to_string(*plan.size_bytes) +
                                         " bytes, got " + std::to_string(got) + "; the partial file was removed, pull again");
  }
  if (!plan.sha256.empty()) {
    const std::string digest = sha256_file(part);
    if (digest != plan.sha256) {
      fs::remove(part, ec);
      throw Error(ErrorCode::kCorrupt, "sha256 mismatch for " + plan.url + ": expected " + plan.sha256 + ", got " + digest +
                                           "; the file was removed, pull again");
    }
  }
  if (options.on_progress) options.on_progress(got, plan.size_bytes.value_or(got));
  fs::rename(part, dest, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot move " + part + " to " + dest + ": " + ec.message());
  return fetched;
}

}  // namespace vks::store
