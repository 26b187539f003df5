// Small one-shot commands against the daemon: hello, model, tokenize, detokenize, cancel, status,
// stats.
#include <iostream>
#include <memory>

#include "clients/cli/cli_common.h"
#include "clients/cli/commands.h"
#include "clients/cli/offline_tokenizer.h"
#include "clients/cli/value_print.h"

namespace vks::cli {
namespace {

struct InfoArgs {
  ConnectionFlags conn;
  bool json = false;
  std::string text;
  std::vector<int32_t> ids;
  bool no_bos = false;
  bool parse_special = false;
  std::string id;
  bool prometheus = false;
  std::string model;  // tokenize/detokenize in-process with this GGUF (no daemon)
};

// --no-bos forces no BOS; otherwise the model's tokenizer.ggml.add_bos_token decides.
std::optional<bool> bos_choice(const InfoArgs& a) { return a.no_bos ? std::optional<bool>(false) : std::nullopt; }

void print(const vkstream::Value& v, bool json) {
  if (json) std::cout << v.to_json() << '\n';
  else print_value_tree(std::cout, v);
}

// Registers a subcommand whose body gets the parsed args; every one has the connection flags.
CLI::App* add(CLI::App& root, int& exit_code, const char* name, const char* help,
              const std::shared_ptr<InfoArgs>& args, std::function<int(InfoArgs&)> body) {
  CLI::App* sub = root.add_subcommand(name, help);
  args->conn.add_to(*sub);
  sub->add_flag("--json", args->json, "print the answer as JSON");
  sub->callback([args, &exit_code, name, body = std::move(body)] {
    exit_code = guarded(name, [&] { return body(*args); });
  });
  return sub;
}

}  // namespace

void add_info_commands(CLI::App& root, int& exit_code) {
  add(root, exit_code, "hello", "Protocol version, server, model and limits of the daemon",
      std::make_shared<InfoArgs>(), [](InfoArgs& a) {
        print(a.conn.connect().hello().raw, a.json);
        return kExitOk;
      });

  add(root, exit_code, "model", "The model the daemon serves", std::make_shared<InfoArgs>(), [](InfoArgs& a) {
    print(a.conn.connect().model(), a.json);
    return kExitOk;
  });

  auto tok = std::make_shared<InfoArgs>();
  CLI::App* t = add(root, exit_code, "tokenize", "Token ids of a text (with the daemon's tokenizer)", tok,
                    [](InfoArgs& a) {
                      const std::string text = a.text == "-" ? read_all_stdin() : a.text;
                      const std::vector<int32_t> ids =
                          a.model.empty() ? a.conn.connect().tokenize(text, bos_choice(a), a.parse_special)
                                          : offline_tokenize(a.model, text, bos_choice(a), a.parse_special);
                      if (a.json) {
                        vkstream::Value::Array arr;
                        for (int32_t id : ids) arr.emplace_back(int64_t{id});
                        std::cout << vkstream::Value(std::move(arr)).to_json() << '\n';
                      } else {
                        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
                        std::cout << '\n';
                      }
                      return kExitOk;
                    });
  t->add_option("text", tok->text, "text ('-' reads stdin)")->required();
  t->add_flag("--no-bos", tok->no_bos, "do not prepend BOS");
  t->add_flag("--parse-special", tok->parse_special, "turn control-token text into control tokens");
  t->add_option("--model", tok->model, "tokenize in-process with this GGUF's tokenizer (no daemon)");

  auto detok = std::make_shared<InfoArgs>();
  CLI::App* d = add(root, exit_code, "detokenize", "Text of token ids", detok, [](InfoArgs& a) {
    std::cout << (a.model.empty() ? a.conn.connect().detokenize(a.ids) : offline_detokenize(a.model, a.ids)) << '\n';
    return kExitOk;
  });
  d->add_option("ids", detok->ids, "token ids")->required();
  d->add_option("--model", detok->model, "detokenize in-process with this GGUF's tokenizer (no daemon)");

  auto cancel = std::make_shared<InfoArgs>();
  CLI::App* c = add(root, exit_code, "cancel", "Cancel a request (from any client)", cancel, [](InfoArgs& a) {
    a.conn.connect().cancel(a.id);
    std::cout << "cancelled " << a.id << '\n';
    return kExitOk;
  });
  c->add_option("id", cancel->id, "request id")->required();

  auto status = std::make_shared<InfoArgs>();
  CLI::App* s = add(root, exit_code, "status", "State of one request", status, [](InfoArgs& a) {
    print(a.conn.connect().status(a.id).raw, a.json);
    return kExitOk;
  });
  s->add_option("id", status->id, "request id")->required();

  auto stats = std::make_shared<InfoArgs>();
  CLI::App* st = add(root, exit_code, "stats", "Queue, KV cache, prefix cache, throughput and latency", stats,
                     [](InfoArgs& a) {
                       vkstream::Client client = a.conn.connect();
                       if (a.prometheus) std::cout << client.stats_prometheus();
                       else print(client.stats(), a.json);
                       return kExitOk;
                     });
  st->add_flag("--prometheus", stats->prometheus, "Prometheus text exposition format");
}

}  // namespace vks::cli
