// Several models in one vkstreamd, through the official `ollama` and `openai` npm packages,
// unmodified: a --models-dir with stories260K, aidreams260K, a kquant fixture and a corrupt
// (truncated) GGUF, served by file stem, loaded on first use, at most two loaded at once
// (--max-loaded-models 2). Listings (tags, ps, show, /v1/models), two models generating at the same
// time, LRU eviction, Ollama's keep_alive and empty-prompt load/unload calls, a corrupt model's
// error leaving the others serving, unknown names (404 listing the served ones). The tests run in
// file order and share one daemon: each one starts from the loaded set the previous ones left,
// and says what it relies on.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, openSync, readSync, closeSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { Ollama } from "ollama";

import { makeChatModel, modelsDir, startDaemon } from "./daemon.js";

const PROMPT = "Once upon a time";
const SERVED = ["aidreams260K", "corrupt", "kquant-q4_k_m", "qwen-chat", "stories260K"];
const greedy20 = { temperature: 0, num_predict: 20 };

let server;
let openai;
let ollama;

// The first `n` bytes of `file`: a GGUF cut inside its header/tensor data, which must not load.
function head(file, n) {
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(n);
  const got = readSync(fd, buf, 0, n, 0);
  closeSync(fd);
  return buf.subarray(0, got);
}

before(async () => {
  server = await startDaemon("vks-http-models-", null, (dir) => {
    const models = join(dir, "models");
    mkdirSync(models);
    for (const name of ["stories260K", "aidreams260K", "kquant-q4_k_m"]) {
      symlinkSync(join(modelsDir, `${name}.gguf`), join(models, `${name}.gguf`));
    }
    writeFileSync(join(models, "corrupt.gguf"), head(join(modelsDir, "stories260K.gguf"), 6000));
    makeChatModel(models, "qwen-chat");  // Qwen2.5's chat template: it calls tools
    return ["--models-dir", models, "--no-model-cache", "--max-loaded-models", "2"];
  });
  openai = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: "unused-on-loopback", maxRetries: 0 });
  ollama = new Ollama({ host: server.baseUrl });
});

after(async () => {
  await server?.stop();
});

// Ollama names carry a tag ("stories260K:latest"); the served id is the file stem.
const stem = (name) => name.replace(/:latest$/, "");
const loadedNames = async () => (await ollama.ps()).models.map((m) => stem(m.name)).sort();

// An unload is done "once its running requests finish": poll ps (no timing is asserted, the
// deadline only keeps a broken daemon from hanging the test) until `want` holds or time is up.
async function psUntil(want) {
  const deadline = Date.now() + 10000;
  let names = await loadedNames();
  while (!want(names) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    names = await loadedNames();
  }
  return names;
}

const generate = async (model, extra = {}) =>
  (await ollama.generate({ model, prompt: PROMPT, options: greedy20, ...extra })).response;

test("ollama: list names every model in the folder, ps is empty before any request", async () => {
  const list = await ollama.list();
  assert.deepEqual(list.models.map((m) => stem(m.name)).sort(), SERVED);
  // --models-dir loads on first use: nothing is loaded yet (no --model pins one).
  assert.deepEqual((await ollama.ps()).models, []);
});

// Filled by the next test: what each tiny model answers alone, greedily, to PROMPT.
const alone = {};

test("ollama: two models generating at the same time each answer as they do alone", async () => {
  // Alone first, one after the other.
  alone.stories260K = await generate("stories260K");
  alone.aidreams260K = await generate("aidreams260K");
  assert.ok(alone.stories260K.length > 0 && alone.aidreams260K.length > 0);
  // Two different models: if both requests ran on one of them the comparison below could not tell.
  assert.notEqual(alone.stories260K, alone.aidreams260K);

  // Both at once, one streamed (its parts concatenated) and one whole.
  const streamed = (async () => {
    let text = "";
    let last = null;
    for await (const part of await ollama.generate(
      { model: "stories260K", prompt: PROMPT, options: greedy20, stream: true })) {
      text += part.response;
      last = part;
    }
    assert.equal(last.done, true);
    assert.equal(stem(last.model), "stories260K");
    return text;
  })();
  const whole = ollama.generate({ model: "aidreams260K", prompt: PROMPT, options: greedy20 });
  const [storiesText, aidreams] = await Promise.all([streamed, whole]);
  assert.equal(storiesText, alone.stories260K);
  assert.equal(aidreams.response, alone.aidreams260K);
  assert.equal(stem(aidreams.model), "aidreams260K");
});

test("ollama: ps lists the loaded models with size and expiry; a third evicts the least recently used", async () => {
  // The previous test loaded stories260K and aidreams260K (the limit, 2). Use stories260K then
  // aidreams260K, so stories260K is the least recently used.
  await generate("stories260K", { options: { temperature: 0, num_predict: 2 } });
  await generate("aidreams260K", { options: { temperature: 0, num_predict: 2 } });
  const ps = await ollama.ps();
  assert.deepEqual(ps.models.map((m) => stem(m.name)).sort(), ["aidreams260K", "stories260K"]);
  for (const m of ps.models) {
    assert.ok(m.size > 0, `${m.name} size ${m.size}`);
    // keep_alive was not given: the default (5 min) keeps it, so it expires in the future.
    const expires = Date.parse(m.expires_at);
    assert.ok(Number.isFinite(expires), `${m.name} expires_at ${m.expires_at}`);
    assert.ok(expires > Date.now(), `${m.name} expires_at ${m.expires_at} is past`);
  }

  // A third model at --max-loaded-models 2: the least recently used idle one (stories260K) goes.
  const kquant = await ollama.generate(
    { model: "kquant-q4_k_m", prompt: PROMPT, options: { temperature: 0, num_predict: 4 } });
  assert.equal(kquant.done, true);
  assert.deepEqual(await loadedNames(), ["aidreams260K", "kquant-q4_k_m"]);
});

test("ollama: an empty prompt with keep_alive 0 unloads, without keep_alive loads", async () => {
  // aidreams260K is loaded (previous test).
  const unload = await ollama.generate({ model: "aidreams260K", prompt: "", keep_alive: 0 });
  assert.equal(unload.done, true);
  assert.equal(unload.done_reason, "unload");
  assert.equal(unload.response, "");
  assert.ok(!(await psUntil((n) => !n.includes("aidreams260K"))).includes("aidreams260K"));

  const load = await ollama.generate({ model: "aidreams260K", prompt: "" });
  assert.equal(load.done, true);
  assert.equal(load.done_reason, "load");
  assert.ok((await loadedNames()).includes("aidreams260K"));
});

// Filled by the next test: what show says of kquant-q4_k_m once it is loaded.
let loadedShow = null;

test("ollama: show answers a loaded model's details; an unknown name is 404 listing the served ones", async () => {
  // Test 3 loaded kquant-q4_k_m and nothing has unloaded it since.
  assert.ok((await loadedNames()).includes("kquant-q4_k_m"));
  loadedShow = await ollama.show({ model: "kquant-q4_k_m" });
  assert.equal(loadedShow.details.format, "gguf");
  assert.equal(loadedShow.details.family, "llama");
  // A kquant fixture: its file type is Q4_K_M.
  assert.equal(loadedShow.details.quantization_level, "Q4_K_M");
  assert.equal(loadedShow.model_info["general.architecture"], "llama");
  assert.ok(loadedShow.model_info["llama.context_length"] > 0);
  // show finds a model by every name a generate takes (here its file name), not by a rule of its own.
  const byFile = await ollama.show({ model: "kquant-q4_k_m.gguf" });
  assert.deepEqual(byFile.details, loadedShow.details);

  await assert.rejects(ollama.show({ model: "no-such-model" }), (e) => {
    assert.equal(e.name, "ResponseError");
    assert.equal(e.status_code, 404);
    assert.match(e.error, /no-such-model/);
    for (const name of SERVED) assert.ok(e.error.includes(`'${name}'`), e.error);
    return true;
  });
});

// What a model can do is known before it loads: its template is read with its header.
// Templates are read off the loop after start (so that many files do not delay serving): poll show
// until they are in (the deadline only keeps a broken daemon from hanging the test).
test("ollama: show lists a model's capabilities before it is loaded", async () => {
  let show = await ollama.show({ model: "qwen-chat" });
  for (const deadline = Date.now() + 10000; !show.capabilities.includes("tools") && Date.now() < deadline;) {
    await new Promise((ok) => setTimeout(ok, 50));
    show = await ollama.show({ model: "qwen-chat" });
  }
  assert.ok(show.capabilities.includes("tools"), JSON.stringify(show.capabilities));
  assert.ok(!(await loadedNames()).includes("qwen-chat"));  // show did not load it
  const stories = await ollama.show({ model: "stories260K" });
  assert.deepEqual(stories.capabilities, ["completion"]);  // no template that renders tools
});

// A model not loaded is listed and shown from its GGUF header (read when the daemon found the file).
test("ollama: show and list of a model not loaded answer from its GGUF header, without loading it",
  async () => {
    // Unload kquant-q4_k_m (loaded since test 3) so that show must read its header.
    await ollama.generate({ model: "kquant-q4_k_m", prompt: "", keep_alive: 0 });
    assert.ok(!(await psUntil((n) => !n.includes("kquant-q4_k_m"))).includes("kquant-q4_k_m"));

    const show = await ollama.show({ model: "kquant-q4_k_m" });
    // Showing it did not load it.
    assert.ok(!(await loadedNames()).includes("kquant-q4_k_m"));
    // What the header says equals what the loaded model said.
    assert.equal(show.details.family, loadedShow.details.family);
    assert.equal(show.details.quantization_level, loadedShow.details.quantization_level);
    assert.equal(show.model_info["general.architecture"], "llama");
    assert.equal(show.model_info["llama.context_length"], loadedShow.model_info["llama.context_length"]);

    const listed = (await ollama.list()).models.find((m) => stem(m.name) === "kquant-q4_k_m");
    assert.equal(listed.details.family, "llama");
    assert.equal(listed.details.quantization_level, "Q4_K_M");
  });

test("ollama: a corrupt model fails with a clear error and the others keep serving", async () => {
  await assert.rejects(generate("corrupt"), (e) => {
    assert.equal(e.name, "ResponseError");
    assert.equal(e.status_code, 500);
    // The model's name, that it cannot load, and why (the file ends early).
    assert.match(e.error, /corrupt/);
    assert.match(e.error, /cannot load/);
    assert.match(e.error, /truncated/);
    return true;
  });
  // Right after, a good model still generates, as it did alone.
  assert.equal(await generate("stories260K"), alone.stories260K);
  assert.ok(!(await loadedNames()).includes("corrupt"));
});

test("openai: models.list names every model, chat on a named one, an unknown one is 404", async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids.sort(), SERVED);
  // One model by any name a request takes: its id, its file name.
  assert.equal((await openai.models.retrieve("aidreams260K")).id, "aidreams260K");
  assert.equal((await openai.models.retrieve("aidreams260K.gguf")).id, "aidreams260K");
  await assert.rejects(openai.models.retrieve("gpt-nope"), (e) => e.status === 404 && /aidreams260K/.test(e.message));

  const c = await openai.chat.completions.create({
    model: "aidreams260K", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 8, temperature: 0,
  });
  assert.equal(c.model, "aidreams260K");
  assert.equal(c.choices[0].message.role, "assistant");
  assert.equal(typeof c.choices[0].message.content, "string");
  assert.ok(c.usage.completion_tokens > 0 && c.usage.completion_tokens <= 8);

  await assert.rejects(
    openai.chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }),
    (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.match(e.message, /stories260K/);
      return true;
    });
});

test("ollama: keep_alive as a Go duration or a number is accepted, another string is 400", async () => {
  const short = { temperature: 0, num_predict: 2 };
  const byDuration = await ollama.generate({ model: "stories260K", prompt: PROMPT, options: short, keep_alive: "5m" });
  assert.equal(byDuration.done, true);
  const bySeconds = await ollama.generate({ model: "stories260K", prompt: PROMPT, options: short, keep_alive: 300 });
  assert.equal(bySeconds.done, true);
  // A negative number keeps the model loaded: ps shows Ollama's "forever" expiry.
  await ollama.generate({ model: "stories260K", prompt: PROMPT, options: short, keep_alive: -1 });
  const kept = (await ollama.ps()).models.find((m) => stem(m.name) === "stories260K");
  assert.equal(kept.expires_at, "2318-01-01T00:00:00Z");
  await assert.rejects(
    ollama.generate({ model: "stories260K", prompt: PROMPT, options: short, keep_alive: "five minutes" }),
    (e) => {
      assert.equal(e.name, "ResponseError");
      assert.equal(e.status_code, 400);
      assert.match(e.error, /keep_alive/);
      return true;
    });
});
