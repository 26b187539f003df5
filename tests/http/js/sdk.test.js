// The official `openai` and `ollama` npm packages, unmodified, against a real vkstreamd --http on
// stories260K (CPU reference): greedy completions reproduce the reference text streamed and not,
// greedy chat replies (openai chat.completions.create, ollama chat) equal the msgpack `chat`
// request's reply that `vkstream chat` prints for the same conversation, embeddings agree across
// openai (base64 and float) and ollama, model listings, errors
// surface as each SDK's own error classes, n: 2 choices streamed and not, and a client that aborts a stream cancels its request
// (seen in /metrics).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { Ollama } from "ollama";

import { buildDir, modelsDir, startDaemon } from "./daemon.js";

const PROMPT = "Once upon a time";
const reference = readFileSync(join(modelsDir, "reference/stories260K_greedy_once_upon_a_time_n64.txt"), "utf8")
  .trimEnd().slice(PROMPT.length);

let dir;
let server;
let baseUrl;
let openai;
let ollama;

before(async () => {
  server = await startDaemon("vks-http-sdk-", join(modelsDir, "stories260K.gguf"));
  ({ dir, baseUrl } = server);
  openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused-on-loopback", maxRetries: 0 });
  ollama = new Ollama({ host: baseUrl });
});

after(async () => {
  await server?.stop();
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
    openai.chat.completions.create({ model: "stories260K", messages: [{ role: "wizard", content: "hi" }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "messages.0.role");
});

// The reply of the msgpack `chat` request for [system, user], as `vkstream chat` prints it (the
// reply, then a newline).
const SYSTEM = "You tell short stories about Lily and her dog.";
const USER = "Tell me a story about the park.";
const CHAT_TOKENS = 24;
let wireReplyCache = null;
function wireChatReply() {
  if (wireReplyCache !== null) return wireReplyCache;
  const r = spawnSync(join(buildDir, "clients/cli/vkstream"),
    ["chat", "--socket", join(dir, "vkstream.sock"), "--greedy", "-n", String(CHAT_TOKENS), "--system", SYSTEM],
    { input: `${USER}\n`, encoding: "utf8", timeout: 30000 });
  assert.equal(r.status, 0, `vkstream chat failed: ${r.stderr}`);
  assert.ok(r.stdout.endsWith("\n"), r.stdout);
  wireReplyCache = r.stdout.slice(0, -1);
  assert.ok(wireReplyCache.length > 0);
  return wireReplyCache;
}
const chatMessages = [{ role: "system", content: SYSTEM }, { role: "user", content: USER }];

test("openai: chat.completions.create equals the msgpack chat reply, streamed and not", async () => {
  const expected = wireChatReply();
  const c = await openai.chat.completions.create(
    { model: "stories260K", messages: chatMessages, max_tokens: CHAT_TOKENS, temperature: 0 });
  assert.equal(c.object, "chat.completion");
  assert.match(c.id, /^chatcmpl-/);
  assert.equal(c.choices[0].message.role, "assistant");
  assert.equal(c.choices[0].message.content, expected);
  assert.ok(["stop", "length"].includes(c.choices[0].finish_reason));
  assert.ok(c.usage.prompt_tokens > 0);

  const stream = await openai.chat.completions.create({
    model: "stories260K", messages: chatMessages, max_tokens: CHAT_TOKENS, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let role = null;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      role = role ?? chunk.choices[0].delta.role ?? null;
      text += chunk.choices[0].delta.content ?? "";
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(role, "assistant");
  assert.equal(text, expected);
  assert.equal(finish, c.choices[0].finish_reason);
  assert.equal(usage.prompt_tokens, c.usage.prompt_tokens);
  assert.equal(usage.completion_tokens, c.usage.completion_tokens);
});

test("openai: n: 2 gives two choices, streamed (the SDK's stream helper reassembles them) and not", async () => {
  const ask = { model: "stories260K", messages: chatMessages, max_tokens: CHAT_TOKENS, temperature: 0.9, seed: 5, n: 2 };
  const c = await openai.chat.completions.create(ask);
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1]);
  assert.notEqual(c.choices[0].message.content, c.choices[1].message.content);  // seeded, sampled: they differ
  const single = await openai.chat.completions.create({ ...ask, n: 1 });
  assert.equal(c.choices[0].message.content, single.choices[0].message.content);  // choice 0 is the request as sent
  assert.equal(c.usage.prompt_tokens, single.usage.prompt_tokens);  // the prompt once

  // The SDK's own reassembly of interleaved chunks by index.
  const stream = openai.chat.completions.stream({ ...ask, stream_options: { include_usage: true } });
  const streamed = await stream.finalChatCompletion();
  assert.equal(streamed.choices.length, 2);
  for (const i of [0, 1]) {
    assert.equal(streamed.choices[i].index, i);
    assert.equal(streamed.choices[i].message.content, c.choices[i].message.content);
    assert.equal(streamed.choices[i].finish_reason, c.choices[i].finish_reason);
  }
  assert.equal(streamed.usage.completion_tokens, c.usage.completion_tokens);

  // Completions, streamed as plain chunks: text per index.
  const greedyTwo = await openai.completions.create({ ...greedy, n: 2, stream: true });
  const texts = ["", ""];
  for await (const chunk of greedyTwo) for (const choice of chunk.choices) texts[choice.index] += choice.text;
  assert.deepEqual(texts.map((t) => t.trimEnd()), [reference, reference]);  // greedy: both the reference
  await assert.rejects(openai.completions.create({ ...greedy, n: 17 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "n");
});

test("ollama: chat equals the msgpack chat reply, streamed and not", async () => {
  const expected = wireChatReply();
  const options = { num_predict: CHAT_TOKENS, temperature: 0 };
  const whole = await ollama.chat({ model: "stories260K", messages: chatMessages, options, stream: false });
  assert.equal(whole.message.role, "assistant");
  assert.equal(whole.message.content, expected);
  assert.equal(whole.done, true);
  assert.ok(whole.prompt_eval_count > 0);
  assert.ok(whole.eval_count > 0 && whole.eval_count <= CHAT_TOKENS);

  let text = "";
  let last = null;
  for await (const part of await ollama.chat({ model: "stories260K", messages: chatMessages, options, stream: true })) {
    text += part.message.content;
    last = part;
  }
  assert.equal(text, expected);
  assert.equal(last.done, true);
  assert.equal(last.done_reason, whole.done_reason);
  assert.equal(last.eval_count, whole.eval_count);
});

test("openai and ollama: embeddings agree (the SDK's default base64 and floats)", async () => {
  const input = ["Once upon a time", "Lily and her dog played in the park."];
  const viaBase64 = await openai.embeddings.create({ model: "stories260K", input });  // the SDK asks for base64
  const viaFloat = await openai.embeddings.create({ model: "stories260K", input, encoding_format: "float" });
  const viaOllama = await ollama.embed({ model: "stories260K", input });
  assert.equal(viaBase64.data.length, 2);
  assert.equal(viaOllama.embeddings.length, 2);
  for (let i = 0; i < 2; ++i) {
    const a = viaBase64.data[i].embedding;
    const b = viaFloat.data[i].embedding;
    const c = viaOllama.embeddings[i];
    assert.ok(a.length > 0);
    assert.equal(a.length, b.length);
    assert.equal(a.length, c.length);
    for (let k = 0; k < a.length; ++k) {
      assert.ok(Math.abs(a[k] - b[k]) < 1e-6 && Math.abs(a[k] - c[k]) < 1e-6, `vector ${i}[${k}]`);
    }
    const norm = Math.sqrt(a.reduce((s, v) => s + v * v, 0));
    assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
  }
  assert.ok(viaFloat.usage.prompt_tokens > 0);
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
    ollama.chat({ model: "stories260K", messages: [{ role: "wizard", content: "hi" }], stream: false }),
    (e) => e.name === "ResponseError" && e.status_code === 400 && /wizard/.test(e.error));
});
