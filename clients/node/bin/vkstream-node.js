#!/usr/bin/env node
// Submits one prompt to vkstreamd over ZeroMQ and prints its text as it arrives on the request's
// PUB topic.
// Run `vkstream-node --help` for the options (the sampling options of the C++ `vkstream generate`).
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { parseArgs } from "node:util";

const USAGE = `usage: vkstream-node [OPTIONS] PROMPT

Submits PROMPT to vkstreamd over ZeroMQ and prints the text as it arrives.

Connection:
  --zmq ENDPOINT            ROUTER endpoint (default ipc://$XDG_RUNTIME_DIR/vkstream/router.zmq)
  --pub ENDPOINT            PUB endpoint (default: the one vkstreamd announces in hello)
  --timeout MS              give up when vkstreamd does not answer (default 10000)
Sampling and stopping:
  -n, --max-tokens N        tokens to generate at most (default: until the context is full)
  -t, --temperature T       sampling temperature (0 = greedy)
  -g, --greedy              same as --temperature 0
  --top-k K                 keep the K most likely tokens (0 = off)
  --top-p P                 nucleus sampling mass (1 = off)
  --min-p P                 drop tokens below P x the top probability (0 = off)
  --repeat-penalty R        repetition penalty (1 = off)
  --presence-penalty X      presence penalty (0 = off)
  --frequency-penalty X     frequency penalty (0 = off)
  --penalty-last-n N        tokens the penalties look back (-1 = all)
  -s, --seed N              random seed (same seed and prompt: same output)
  --stop TEXT               stop string (repeatable; not printed)
  --stop-token ID           stop token id (repeatable)
  --logit-bias ID=BIAS      added to a token's logit (repeatable)
  --ignore-eos              keep generating after the end-of-sequence token
  --min-tokens N            generate at least N tokens
  --logprobs N              also return the top-N alternatives per token (0..20)
  --priority N              -1000..1000, higher first
  --no-bos                  do not prepend the BOS token
Output:
  --json                    one JSON event object per line
  -h, --help                this text

Exit codes: 0 ok, 1 the request failed, 2 bad command line, 3 vkstreamd is not running.
`;

const OPTIONS = {
  zmq: { type: "string" },
  pub: { type: "string" },
  timeout: { type: "string" },
  "max-tokens": { type: "string", short: "n" },
  temperature: { type: "string", short: "t" },
  greedy: { type: "boolean", short: "g" },
  "top-k": { type: "string" },
  "top-p": { type: "string" },
  "min-p": { type: "string" },
  "repeat-penalty": { type: "string" },
  "repetition-penalty": { type: "string" },
  "presence-penalty": { type: "string" },
  "frequency-penalty": { type: "string" },
  "penalty-last-n": { type: "string" },
  seed: { type: "string", short: "s" },
  stop: { type: "string", multiple: true },
  "stop-token": { type: "string", multiple: true },
  "logit-bias": { type: "string", multiple: true },
  "ignore-eos": { type: "boolean" },
  "min-tokens": { type: "string" },
  logprobs: { type: "string" },
  priority: { type: "string" },
  "no-bos": { type: "boolean" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h" },
};

function usageError(message) {
  process.stderr.write(`vkstream-node: ${message} (see vkstream-node --help)\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({ allowPositionals: true, options: OPTIONS });
} catch (err) {
  usageError(err.message);
}
const { values, positionals } = parsed;
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (positionals.length !== 1) usageError(positionals.length === 0 ? "no PROMPT given" : "give exactly one PROMPT (quote it)");

const request = buildRequest();
const timeoutMs = number("timeout") ?? 10000;

// Loaded after the command line so that --help and usage errors work without the zeromq module.
let VkstreamClient, VkstreamError, defaultEndpoints, follow;
try {
  ({ VkstreamClient, VkstreamError, defaultEndpoints, follow } = await import("../src/client.js"));
} catch (err) {
  process.stderr.write(`vkstream-node: cannot load the client (${err.code || err.message}); install its modules with ` +
                       "`npm ci --prefix clients/node`\n");
  process.exit(1);
}

function number(flag, { integer = true } = {}) {
  const text = values[flag];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
    usageError(`--${flag}: expected ${integer ? "an integer" : "a number"}, got '${text}'`);
  }
  return n;
}

// The request: only the options given are sent, as the C++ CLI does.
function buildRequest() {
  const request = { prompt: positionals[0] };
  const put = (field, value) => { if (value !== undefined) request[field] = value; };
  put("max_tokens", number("max-tokens"));
  put("temperature", values.greedy ? 0 : number("temperature", { integer: false }));
  put("top_k", number("top-k"));
  put("top_p", number("top-p", { integer: false }));
  put("min_p", number("min-p", { integer: false }));
  put("repetition_penalty", number("repeat-penalty", { integer: false }) ?? number("repetition-penalty", { integer: false }));
  put("presence_penalty", number("presence-penalty", { integer: false }));
  put("frequency_penalty", number("frequency-penalty", { integer: false }));
  put("penalty_last_n", number("penalty-last-n"));
  put("seed", number("seed"));
  put("min_tokens", number("min-tokens"));
  put("logprobs", number("logprobs"));
  put("priority", number("priority"));
  if (values.stop) request.stop = values.stop;
  if (values["stop-token"]) {
    request.stop_token_ids = values["stop-token"].map((t) => {
      const n = Number(t);
      if (!Number.isInteger(n)) usageError(`--stop-token: expected a token id, got '${t}'`);
      return n;
    });
  }
  if (values["logit-bias"]) {
    request.logit_bias = {};
    for (const entry of values["logit-bias"]) {
      const m = /^(\d+)=(-?[0-9.eE+-]+|-inf)$/.exec(entry);
      if (!m) usageError(`--logit-bias: expected ID=BIAS, got '${entry}'`);
      request.logit_bias[m[1]] = m[2] === "-inf" ? -Infinity : Number(m[2]);
    }
  }
  if (values["ignore-eos"]) request.ignore_eos = true;
  if (values["no-bos"]) request.add_bos = false;
  return request;
}

// ZeroMQ waits silently for an ipc:// peer that is not there: check that something listens first.
function checkListening(endpoint) {
  if (!endpoint.startsWith("ipc://")) return Promise.resolve();
  const path = endpoint.slice("ipc://".length);
  const scope = path.startsWith("/run/vkstream/") ? "sudo systemctl start vkstream.socket" : "systemctl --user start vkstream.socket";
  const notRunning = (why) =>
    new VkstreamError(`vkstreamd is not running at ${endpoint} (${why}): start it with \`vkstreamd --model FILE.gguf\` or \`${scope}\``,
      { code: "not_running" });
  if (!existsSync(path)) return Promise.reject(notRunning("no socket file"));
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    sock.setTimeout(2000, () => { sock.destroy(); reject(notRunning("no answer")); });
    sock.once("connect", () => { sock.destroy(); resolve(); });
    sock.once("error", (err) => reject(notRunning(err.code || err.message)));
  });
}

const defaults = defaultEndpoints();
const router = values.zmq ?? defaults.router;
let code = 0;
let client = null;
try {
  await checkListening(router);
  client = new VkstreamClient(router, { timeoutMs });
  const hello = await client.hello();
  const pub = values.pub ?? (hello.pub_endpoint || defaults.pub);
  const accepted = await client.generate(request);
  for await (const ev of follow(client, pub, accepted.topic, accepted.id)) {
    if (values.json) process.stdout.write(JSON.stringify(ev) + "\n");
    else if (ev.type === "token") process.stdout.write(ev.text);
    if (ev.type === "finished" && ev.reason === "error") code = 1;
  }
  if (!values.json) process.stdout.write("\n");
} catch (err) {
  const notRunning = err instanceof VkstreamError && (err.code === "not_running" || err.code === "timeout");
  const hint = err instanceof VkstreamError && err.code === "timeout"
    ? " (is vkstreamd running? start it with `vkstreamd --model FILE.gguf` or `systemctl --user start vkstream.socket`)"
    : "";
  process.stderr.write(`vkstream-node: ${err.message}${hint}\n`);
  code = notRunning ? 3 : 1;
} finally {
  if (client) client.close();
}
process.exit(code);
