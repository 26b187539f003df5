// `vkstream pull SOURCE`: downloads a GGUF (URL or Hugging Face owner/repo[:quant]) into the user's
// model cache, resuming a partial download and checking size and sha256 where the source gives them.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "engine/common/error.h"
#include "engine/model/llama_model.h"
#include "store/downloader.h"
#include "store/model_cache.h"
#include "store/model_pull.h"

namespace vks::cli {
namespace {

struct PullArgs {
  std::string source;
  bool quiet = false;
};

std::string runnable_verdict(const std::string& path) {
  try {
    const auto model = LlamaModel::load(path);
    return "runnable";
  } catch (const Error& e) {
    return std::string("not runnable by this build: ") + e.what();
  }
}

int run_pull(const PullArgs& a) {
  try {
    const store::PullJob job = store::plan_pull(a.source, store::model_cache_dir());
    const store::PullPlan& plan = job.plan;
    const std::string& dest = job.dest;
    if (store::pulled_already(job)) {
      if (!a.quiet) std::cerr << "already cached and verified\n";
    } else {
      if (!a.quiet) {
        std::cerr << "pulling " << plan.url;
        if (plan.size_bytes) std::cerr << " (" << store::human_size(*plan.size_bytes) << ")";
        std::cerr << '\n';
      }
      store::DownloadOptions options;
      options.progress = !a.quiet && ::isatty(STDERR_FILENO) == 1;
      store::download_file(job.plan, job.dest, options);  // pulled_already has just been checked
    }
    const std::string verdict = runnable_verdict(dest);
    // stdout: the path, so scripts can do `vkstreamd --model "$(vkstream pull ...)"`.
    std::cout << dest << '\n';
    if (!a.quiet) {
      std::cerr << plan.cache_name << ": " << verdict << "; serve it with: vkstreamd --model "
                << (job.source.is_url ? plan.cache_name : a.source) << '\n';
    }
    return kExitOk;
  } catch (const Error& e) {
    print_error("pull: " + std::string(e.what()) + " [" + std::string(error_code_name(e.code())) + "]");
    return e.code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
}

}  // namespace

void add_pull_command(CLI::App& root, int& exit_code) {
  auto a = std::make_shared<PullArgs>();
  CLI::App* pull = root.add_subcommand(
      "pull",
      "Download a GGUF into the model cache ($XDG_CACHE_HOME/vkstream/models): SOURCE is an http(s) URL or a "
      "Hugging Face OWNER/REPO[:QUANT] (default quant Q4_K_M). Resumes a broken download; checks size and sha256. "
      "Prints the file's path. Env: VKSTREAM_HF_ENDPOINT (default https://huggingface.co), HF_TOKEN, "
      "VKSTREAM_CACHE_DIR.");
  pull->add_option("source", a->source, "URL or OWNER/REPO[:QUANT]")->required();
  pull->add_flag("-q,--quiet", a->quiet, "no progress or summary on stderr");
  pull->callback([a, &exit_code] { exit_code = guarded("pull", [&] { return run_pull(*a); }); });
}

}  // namespace vks::cli
