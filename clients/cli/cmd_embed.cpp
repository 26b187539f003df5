// `vkstream embed TEXT...`: one JSON array holding one array of floats per text, in order
// (docs/PROTOCOL.md 3.11).
#include <charconv>
#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"

namespace vks::cli {
namespace {

struct EmbedArgs {
  ConnectionFlags conn;
  std::vector<std::string> texts;
  std::string pooling;
  bool raw = false;
  bool no_bos = false;
};

// Shortest decimal that reads back as the same float32.
void print_float(std::ostream& out, float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.write(buf, ec == std::errc() ? end - buf : 0);
}

}  // namespace

void add_embed_command(CLI::App& root, int& exit_code) {
  auto args = std::make_shared<EmbedArgs>();
  CLI::App* sub = root.add_subcommand("embed", "Embeddings of texts: prints one JSON array of float arrays, in order");
  args->conn.add_to(*sub);
  sub->add_option("texts", args->texts, "texts to embed ('-' reads stdin)")->required();
  sub->add_option("--pooling", args->pooling, "mean, cls or last (default: the model's, mean for generative models)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  sub->add_flag("--raw", args->raw, "do not L2-normalize the vectors");
  sub->add_flag("--no-bos", args->no_bos, "do not prepend BOS to each text");
  sub->callback([args, &exit_code] {
    exit_code = guarded("embed", [&] {
      std::vector<std::string> texts = args->texts;
      for (std::string& t : texts) {
        if (t == "-") t = read_all_stdin();
      }
      vkstream::EmbedOptions options;
      options.normalize = !args->raw;
      options.pooling = args->pooling;
      if (args->no_bos) options.add_bos = false;
      const auto vectors = args->conn.connect().embed(texts, options);
      std::cout << '[';
      for (size_t i = 0; i < vectors.size(); ++i) {
        std::cout << (i ? ",[" : "[");
        for (size_t k = 0; k < vectors[i].size(); ++k) {
          if (k) std::cout << ',';
          print_float(std::cout, vectors[i][k]);
        }
        std::cout << ']';
      }
      std::cout << "]\n";
      return kExitOk;
    });
  });
}

}  // namespace vks::cli
