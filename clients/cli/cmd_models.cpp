// `vkstream models`: the GGUFs in the user's model cache with size, architecture, type and whether
// this build can run them (the verdict of vks-gguf-info); `--loaded`: what a running daemon serves,
// loaded or not, with the memory each loaded one holds and when it unloads.
#include <cstdio>
#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "engine/common/error.h"
#include "engine/gguf/file_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "store/downloader.h"
#include "store/model_cache.h"

namespace vks::cli {
namespace {

struct ModelSummary {
  std::string architecture = "?";
  std::string type = "?";  // gguf::model_quantization: "Q4_K_M", "F32", ... ("none" without matrices)
  bool runnable = false;
  std::string why_not;
  ParameterCounts params;    // of a runnable model
  uint32_t n_experts = 0;    // mixture of experts: experts per layer and per token (0: dense)
  uint32_t n_experts_used = 0;
};

// "1.1B", "30.5B (3.4B active, 8 of 128 experts)".
std::string parameters_text(const ModelSummary& s) {
  auto scaled = [](uint64_t n) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), n >= 1'000'000'000 ? "%.1fB" : "%.0fM", n >= 1'000'000'000 ? n / 1e9 : n / 1e6);
    return std::string(buf);
  };
  if (!s.runnable) return "-";
  if (s.n_experts <= 1) return scaled(s.params.total);
  return scaled(s.params.total) + " (" + scaled(s.params.active) + " active, " + std::to_string(s.n_experts_used) +
         " of " + std::to_string(s.n_experts) + " experts)";
}

std::string metadata_string(const gguf::GgufFile& file, const char* key) {
  for (const gguf::KeyValue& kv : file.metadata()) {
    if (kv.key == key && kv.value.type == gguf::ValueType::kString) return kv.value.s;
  }
  return {};
}

ModelSummary summarize(const std::string& path) {
  ModelSummary s;
  try {
    gguf::GgufFile file = gguf::GgufFile::open(path);
    if (std::string arch = metadata_string(file, "general.architecture"); !arch.empty()) s.architecture = arch;
    s.type = gguf::model_quantization(file);
    if (s.type.empty()) s.type = "none";
    try {
      const auto model = LlamaModel::from_file(std::move(file));
      s.runnable = true;
      s.params = count_parameters(model->config());
      s.n_experts = model->config().n_experts;
      s.n_experts_used = model->config().n_experts_used;
    } catch (const Error& e) {
      s.why_not = e.what();
    }
  } catch (const Error& e) {
    s.why_not = std::string("unreadable: ") + e.what();
  }
  return s;
}

int run_models(bool json) {
  const std::string dir = store::model_cache_dir();
  const std::vector<store::CachedModel> models = store::list_cached_models(dir);
  if (json) {
    vkstream::Value::Array arr;
    for (const store::CachedModel& m : models) {
      const ModelSummary s = summarize(m.path);
      vkstream::Value::Map entry{{"name", vkstream::Value(m.name)},
                                 {"path", vkstream::Value(m.path)},
                                 {"size_bytes", vkstream::Value(m.size_bytes)},
                                 {"architecture", vkstream::Value(s.architecture)},
                                 {"type", vkstream::Value(s.type)},
                                 {"runnable", vkstream::Value(s.runnable)}};
      if (!s.runnable) entry.emplace_back("reason", vkstream::Value(s.why_not));
      if (s.runnable) {
        entry.emplace_back("parameters", vkstream::Value(static_cast<int64_t>(s.params.total)));
        entry.emplace_back("active_parameters", vkstream::Value(static_cast<int64_t>(s.params.active)));
        entry.emplace_back("experts", vkstream::Value(static_cast<int64_t>(s.n_experts)));
        entry.emplace_back("experts_used", vkstream::Value(static_cast<int64_t>(s.n_experts_used)));
      }
      arr.emplace_back(std::move(entry));
    }
    std::cout << vkstream::Value(std::move(arr)).to_json() << '\n';
    return kExitOk;
  }
  if (models.empty()) {
    std::cout << "no models in " << dir << " (get one with: vkstream pull OWNER/REPO[:QUANT] or URL)\n";
    return kExitOk;
  }
  std::printf("%-56s %10s  %-8s %-6s %-34s %s\n", "NAME", "SIZE", "ARCH", "TYPE", "PARAMETERS", "RUNNABLE");
  for (const store::CachedModel& m : models) {
    const ModelSummary s = summarize(m.path);
    std::printf("%-56s %10s  %-8s %-6s %-34s %s\n", m.name.c_str(), store::human_size(m.size_bytes).c_str(),
                s.architecture.c_str(), s.type.c_str(), parameters_text(s).c_str(),
                s.runnable ? "yes" : ("no: " + s.why_not).c_str());
  }
  std::printf("(in %s; serve one with: vkstreamd --model NAME)\n", dir.c_str());
  return kExitOk;
}

// "4m59s", "never", "now": when an idle loaded model unloads.
std::string expiry_text(int64_t expires_in_ms) {
  if (expires_in_ms < 0) return "never";
  const int64_t s = expires_in_ms / 1000;
  if (s == 0) return "now";
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m";
}

int run_served_models(const ConnectionFlags& conn, bool json, bool loaded_only) {
  vkstream::Client client = conn.connect();
  const vkstream::ModelList list = client.models();
  std::vector<const vkstream::ServedModel*> shown;
  for (const vkstream::ServedModel& m : list.models) {
    if (!loaded_only || m.loaded || m.loading) shown.push_back(&m);
  }
  if (json) {
    vkstream::Value::Array arr;
    for (const vkstream::ServedModel* m : shown) {
      arr.emplace_back(vkstream::Value::Map{{"name", vkstream::Value(m->name)},
                                            {"path", vkstream::Value(m->path)},
                                            {"loaded", vkstream::Value(m->loaded)},
                                            {"loading", vkstream::Value(m->loading)},
                                            {"pinned", vkstream::Value(m->pinned)},
                                            {"default", vkstream::Value(m->is_default)},
                                            {"running", vkstream::Value(m->running)},
                                            {"resident_bytes", vkstream::Value(m->resident_bytes)},
                                            {"expires_in_ms", vkstream::Value(m->expires_in_ms)},
                                            {"device", vkstream::Value(m->device)}});
    }
    std::cout << vkstream::Value(std::move(arr)).to_json() << '\n';
    return kExitOk;
  }
  std::printf("%-40s %-8s %10s  %-8s %7s  %s\n", "NAME", "STATE", "MEMORY", "DEVICE", "RUNNING", "UNLOADS IN");
  for (const vkstream::ServedModel* m : shown) {
    const char* state = m->loading ? "loading" : m->loaded ? (m->pinned ? "pinned" : "loaded") : "-";
    std::printf("%-40s %-8s %10s  %-8s %7lld  %s\n", (m->name + (m->is_default ? " *" : "")).c_str(), state,
                m->loaded ? store::human_size(m->resident_bytes).c_str() : "-", m->loaded ? m->device.c_str() : "-",
                static_cast<long long>(m->running), m->loaded ? expiry_text(m->expires_in_ms).c_str() : "-");
  }
  std::printf("(%zu of %zu served models; at most %lld loaded at once; * = the default)\n", shown.size(),
              list.models.size(), static_cast<long long>(list.max_loaded));
  return kExitOk;
}

}  // namespace

void add_models_command(CLI::App& root, int& exit_code) {
  struct Flags {
    bool json = false;
    bool loaded = false;
    bool served = false;
    ConnectionFlags conn;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* models = root.add_subcommand(
      "models", "List the models in the cache (see `vkstream pull`) and whether they run, or what a daemon serves");
  models->add_flag("--json", f->json, "print a JSON array");
  models->add_flag("--loaded", f->loaded, "the models the running daemon has loaded now (memory, unload time)");
  models->add_flag("--served", f->served, "every model the running daemon serves, loaded or not");
  f->conn.add_to(*models);
  models->callback([f, &exit_code] {
    exit_code = guarded("models", [&] {
      if (f->loaded || f->served) return run_served_models(f->conn, f->json, f->loaded);
      return run_models(f->json);
    });
  });
}

}  // namespace vks::cli
