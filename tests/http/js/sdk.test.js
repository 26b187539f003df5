// The official `openai` and `ollama` npm packages, unmodified, against a real vkstreamd --http on
// stories260K (CPU reference): greedy completions reproduce the reference text streamed and not,
// model listings, errors surface as each SDK's own error classes, and a client that aborts a
// stream cancels its request (seen in /metrics).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Ollama } from "ollama";

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, "../../..");
const buildDir = process.env.VKSTREAM_BUILD_DIR ?? join(projectRoot, "build");
const modelsDir = process.env.VKSTREAM_MODELS || resolve(projectRoot, "../shared/models");
const PROMPT = "Once upon a time";
const reference = readFileSync(join(modelsDir, "reference/stories260K_greedy_once_upon_a_time_n64.txt"), "utf8")
  .trimEnd().slice(PROMPT.length);

let dir;
let daemon;
let baseUrl;
let openai;
let ollama;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "vks-http-sdk-"));
  let log = "";
  daemon = spawn(join(buildDir, "server/vkstreamd"), [
    "--model", join(modelsDir, "stories260K.gguf"), "--cpu",
    "--socket", join(dir, "vkstream.sock"), "--zmq", `ipc://${dir}/router.zmq`, "--pub", `ipc://${dir}/pub.zmq`,
    "--http", "127.0.0.1:0",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  const found = new Promise((ok, fail) => {
    const onData = (d) => {
      log += d;
      const m = log.match(/HTTP API on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m && log.includes("vkstreamd ready")) ok(m[1]);
    };
    daemon.stdout.on("data", onData);
    daemon.stderr.on("data", onData);
    daemon.on("exit", () => fail(new Error(`vkstreamd exited: ${log}`)));
    setTimeout(() => fail(new Error(`vkstreamd did not start: ${log}`)), 60000).unref();
  });
  baseUrl = await found;
  openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused-on-loopback", maxRetries: 0 });
  ollama = new Ollama({ host: baseUrl });
});

after(async () => {
  if (daemon && daemon.exitCode === null) {
    const exited = new Promise((r) => daemon.once("exit", r));
    daemon.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

const greedy = { model: "stories260K", prompt: PROMPT, max_tokens: 60, temperature: 0 };

test("openai: completions.create reproduces the greedy reference", async () => {
  const c = await openai.completions.create(greedy);
  assert.equal(c.choices[0].text.trimEnd(), reference);
  assert.equal(c.choices[0].finish_reason, "length");
  assert.match(c.id, /^cmpl-/);
  assert.equal(c.usage.completion_tokens, 60);
});

test("openai: a streamed completion is the same text, with usage when asked", async () => {
  const stream = await openai.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text.trimEnd(), reference);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 60);
});

test("openai: models.list names the served model", async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ["stories260K"]);
});

test("openai: errors are the SDK's error classes", async () => {
  await assert.rejects(openai.completions.create({ ...greedy, model: "gpt-nope" }), OpenAI.NotFoundError);
  await assert.rejects(openai.completions.create({ ...greedy, temperature: -3 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, "temperature");
    return true;
  });
  await assert.rejects(
    openai.chat.completions.create({ model: "stories260K", messages: [{ role: "user", content: "hi" }] }),
    (e) => e instanceof OpenAI.APIError && e.status === 501 && /chat/.test(e.message));
});

async function metric(name) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line.split(" ")[1]);
}

test("openai: aborting a stream cancels its request at once", async () => {
  const before = await metric("vkstream_generated_tokens_total");
  const controller = new AbortController();
  const stream = await openai.completions.create(
    { prompt: PROMPT, max_tokens: 2000, ignore_eos: true, temperature: 0, stream: true },
    { signal: controller.signal });
  let chunks = 0;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0 && ++chunks === 3) {
      controller.abort();  // the SDK ends the stream; the connection closes
      break;
    }
  }
  assert.equal(chunks, 3);
  const deadline = Date.now() + 5000;
  while ((await metric("vkstream_requests_running")) > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(await metric("vkstream_requests_running"), 0);
  assert.ok((await metric("vkstream_generated_tokens_total")) - before < 2000, "the request ran to its end");
});

test("ollama: generate (streamed and not) reproduces the greedy reference", async () => {
  const options = { num_predict: 60, temperature: 0 };
  const whole = await ollama.generate({ model: "stories260K", prompt: PROMPT, options, stream: false });
  assert.equal(whole.response.trimEnd(), reference);
  assert.equal(whole.done, true);
  assert.equal(whole.done_reason, "length");
  assert.equal(whole.eval_count, 60);
  assert.equal(whole.prompt_eval_count, 5);
  assert.ok(whole.total_duration > 0);

  let text = "";
  let last = null;
  for await (const part of await ollama.generate({ model: "stories260K", prompt: PROMPT, options, stream: true })) {
    text += part.response;
    last = part;
  }
  assert.equal(text.trimEnd(), reference);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, 60);
});

test("ollama: list, show, ps (and /api/version)", async () => {
  const list = await ollama.list();
  assert.equal(list.models[0].name, "stories260K:latest");
  assert.equal(list.models[0].details.format, "gguf");
  const show = await ollama.show({ model: "stories260K" });
  assert.equal(show.details.family, "llama");
  const ps = await ollama.ps();
  assert.equal(ps.models.length, 1);
  const version = await (await fetch(`${baseUrl}/api/version`)).json();  // (no SDK call for it)
  assert.equal(typeof version.version, "string");
});

test("ollama: errors are ResponseError with the status", async () => {
  await assert.rejects(ollama.generate({ model: "nope", prompt: PROMPT, stream: false }), (e) => {
    assert.equal(e.name, "ResponseError");
    assert.equal(e.status_code, 404);
    assert.match(e.error, /nope/);
    return true;
  });
  await assert.rejects(
    ollama.chat({ model: "stories260K", messages: [{ role: "user", content: "hi" }], stream: false }),
    (e) => e.name === "ResponseError" && e.status_code === 501);
});
