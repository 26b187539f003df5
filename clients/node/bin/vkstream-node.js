#!/usr/bin/env node
// Submits one prompt to vkstreamd over ZeroMQ and prints its text as it arrives on the request's
// PUB topic.
//   vkstream-node [--zmq ENDPOINT] [--pub ENDPOINT] [--max-tokens N] [--temperature T] "prompt"
import { parseArgs } from "node:util";
import { VkstreamClient, VkstreamError, defaultEndpoints, follow } from "../src/client.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    zmq: { type: "string" },
    pub: { type: "string" },
    "max-tokens": { type: "string" },
    temperature: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
if (positionals.length !== 1) {
  process.stderr.write("usage: vkstream-node [--zmq ENDPOINT] [--pub ENDPOINT] [--max-tokens N] [--temperature T] [--json] PROMPT\n");
  process.exit(2);
}

const defaults = defaultEndpoints();
const client = new VkstreamClient(values.zmq ?? defaults.router, { timeoutMs: 10000 });
let code = 0;
try {
  const hello = await client.hello();
  const pub = values.pub ?? (hello.pub_endpoint || defaults.pub);
  const request = { prompt: positionals[0] };
  if (values["max-tokens"] !== undefined) request.max_tokens = Number(values["max-tokens"]);
  if (values.temperature !== undefined) request.temperature = Number(values.temperature);
  const accepted = await client.generate(request);
  for await (const ev of follow(client, pub, accepted.topic, accepted.id)) {
    if (values.json) process.stdout.write(JSON.stringify(ev) + "\n");
    else if (ev.type === "token") process.stdout.write(ev.text);
    if (ev.type === "finished" && ev.reason === "error") code = 1;
  }
  if (!values.json) process.stdout.write("\n");
} catch (err) {
  const hint = err instanceof VkstreamError && err.code === "timeout"
    ? " (is vkstreamd running? start it with `vkstreamd --model FILE.gguf` or `systemctl --user start vkstream.socket`)"
    : "";
  process.stderr.write(`vkstream-node: ${err.message}${hint}\n`);
  code = err instanceof VkstreamError && err.code !== "timeout" ? 1 : 3;
} finally {
  client.close();
}
process.exit(code);
