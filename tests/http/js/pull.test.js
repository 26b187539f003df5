// Getting and removing models over Ollama's API (issue 33), through the official `ollama` npm
// client, unmodified: pull({stream: true}) iterates Ollama's NDJSON progress from a fake Hugging
// Face on loopback (tests/clients/fake_model_server.py: no network), the pulled model is listed and
// generates by its name; stream: false answers one success; a sha256 mismatch ends the stream with
// an error and leaves no file; delete() removes a pulled model and refuses a --models-dir file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Ollama } from "ollama";

import { modelsDir, startDaemon } from "./daemon.js";

const here = dirname(fileURLToPath(import.meta.url));
const NAME = "test/stories260K-GGUF:F32";
const source = readFileSync(join(modelsDir, "stories260K.gguf"));
const digest = `sha256:${createHash("sha256").update(source).digest("hex")}`;

let hubDir;
let hub;
let hubUrl;
let server;
let ollama;
let cache;

before(async () => {
  hubDir = mkdtempSync(join(tmpdir(), "vks-pull-hub-"));
  const repo = join(hubDir, "hub/test/stories260K-GGUF");
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "stories260K.F32.gguf"), source);
  writeFileSync(join(repo, "stories260K.Q8_0.gguf"), source);
  writeFileSync(join(repo, "stories260K.Q8_0.gguf.fake-sha256"), "0".repeat(64));  // a corrupted download
  const portFile = join(hubDir, "port");
  hub = spawn("/usr/bin/python3", [resolve(here, "../../clients/fake_model_server.py"), join(hubDir, "hub"), portFile,
    join(hubDir, "requests.log")], { stdio: "ignore" });
  for (let i = 0; i < 200 && !existsSync(portFile); ++i) await new Promise((r) => setTimeout(r, 50));
  hubUrl = `http://127.0.0.1:${readFileSync(portFile, "utf8")}`;
  process.env.VKSTREAM_HF_ENDPOINT = hubUrl;  // the daemon inherits both
  server = await startDaemon("vks-http-pull-", null, (dir) => {
    cache = join(dir, "cache");
    process.env.VKSTREAM_CACHE_DIR = cache;
    const models = join(dir, "models");
    mkdirSync(models);
    symlinkSync(join(modelsDir, "aidreams260K.gguf"), join(models, "aidreams260K.gguf"));
    return ["--models-dir", models];
  });
  ollama = new Ollama({ host: server.baseUrl });
});

after(async () => {
  await server?.stop();
  hub?.kill();
  if (hubDir) rmSync(hubDir, { recursive: true, force: true });
});

const listed = async () => (await ollama.list()).models.map((m) => m.name.replace(/:latest$/, ""));
const pulledFile = () => join(cache, "test/stories260K-GGUF/stories260K.F32.gguf");

test("pull streams Ollama's progress, then the model is listed and generates by its name", async () => {
  assert.ok(!(await listed()).includes(NAME));
  const parts = [];
  for await (const part of await ollama.pull({ model: NAME, stream: true })) parts.push(part);
  assert.deepEqual(parts[0], { status: "pulling manifest" });
  const pulling = parts.filter((p) => p.status.startsWith("pulling ") && p.digest);
  assert.ok(pulling.length > 0, JSON.stringify(parts));
  for (const p of pulling) {
    assert.equal(p.status, `pulling ${digest.slice(7, 19)}`);
    assert.equal(p.digest, digest);
    assert.equal(p.total, source.length);
    assert.ok(p.completed <= p.total);
  }
  assert.equal(pulling.at(-1).completed, source.length);
  assert.deepEqual(parts.slice(-3).map((p) => p.status), ["verifying sha256 digest", "writing manifest", "success"]);
  assert.deepEqual(readFileSync(pulledFile()), source);

  assert.ok((await listed()).includes(NAME));
  const answer = await ollama.generate({ model: NAME, prompt: "Once upon a time", options: { temperature: 0, num_predict: 8 } });
  assert.ok(answer.response.length > 0);
  assert.equal(answer.done, true);
});

test("pull with stream false answers one success (a URL, into the cache's top)", async () => {
  const url = `${hubUrl}/test/stories260K-GGUF/resolve/main/stories260K.F32.gguf`;
  assert.deepEqual(await ollama.pull({ model: url, stream: false }), { status: "success" });
  assert.ok(existsSync(join(cache, "stories260K.F32.gguf")));
  assert.ok((await listed()).includes("stories260K.F32"));
});

test("a sha256 mismatch ends the stream with an error and leaves no file behind", async () => {
  const name = "test/stories260K-GGUF:Q8_0";
  await assert.rejects(async () => {
    for await (const part of await ollama.pull({ model: name, stream: true })) void part;
  }, /sha256 mismatch/);
  const repoDir = join(cache, "test/stories260K-GGUF");
  assert.deepEqual(readdirSync(repoDir).filter((f) => f.includes("Q8_0")), []);
  assert.ok(!(await listed()).includes(name));
  // Not streamed: the error and its status in Ollama's shape.
  const res = await fetch(`${server.baseUrl}/api/pull`, { method: "POST", body: JSON.stringify({ model: name, stream: false }) });
  assert.equal(res.status, 502);
  assert.match((await res.json()).error, /sha256 mismatch/);
  const bad = await fetch(`${server.baseUrl}/api/pull`, { method: "POST", body: JSON.stringify({ model: "llama3.2", stream: false }) });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error, /OWNER\/REPO/);
  // Refused before anything started: the status says so even when streaming was asked.
  await assert.rejects(ollama.pull({ model: "llama3.2", stream: true }), (e) => e.status_code === 400 && /OWNER\/REPO/.test(e.error));
});

test("delete removes a pulled model; a --models-dir file and unknown names are refused", async () => {
  await ollama.delete({ model: NAME });
  assert.ok(!existsSync(pulledFile()));
  assert.ok(!(await listed()).includes(NAME));
  await assert.rejects(ollama.delete({ model: NAME }), (e) => e.status_code === 404 && /not found/.test(e.error));
  await assert.rejects(ollama.delete({ model: "aidreams260K" }), (e) => e.status_code === 403 && /--models-dir/.test(e.error));
  assert.ok((await listed()).includes("aidreams260K"));
  const raw = await fetch(`${server.baseUrl}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: "stories260K.F32" }) });
  assert.equal(raw.status, 200);
  assert.equal(await raw.text(), "");
});
