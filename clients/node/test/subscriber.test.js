// The Node.js client against the real vkstreamd on stories260K: a greedy request followed on its
// PUB topic yields the reference ids; a follower arriving after the end still gets every event;
// errors are typed; the command-line script prints the reference text.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Subscriber } from "zeromq";
import { decode } from "@msgpack/msgpack";
import { VkstreamClient, VkstreamError, follow } from "../src/client.js";

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, "../../..");
const buildDir = process.env.VKSTREAM_BUILD_DIR ?? join(projectRoot, "build");
const modelsDir = process.env.VKSTREAM_MODELS || resolve(projectRoot, "../shared/models");
const refBase = join(modelsDir, "reference/stories260K_greedy_once_upon_a_time_n64");
const PROMPT = "Once upon a time";

function readReference() {
  const lines = readFileSync(`${refBase}.ids`, "utf8").split("\n").filter((l) => l.trim() && !l.startsWith("#"));
  return {
    promptIds: lines[0].trim().split(/\s+/).map(Number),
    generatedIds: lines[1].trim().split(/\s+/).map(Number),
    text: readFileSync(`${refBase}.txt`, "utf8"),
  };
}

const ref = readReference();
let dir;
let daemon;
let router;
let pub;

function socketAccepts(path) {
  return new Promise((ok) => {
    const s = connect(path);
    s.on("connect", () => { s.destroy(); ok(true); });
    s.on("error", () => ok(false));
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "vks-node-"));
  router = `ipc://${dir}/router.zmq`;
  pub = `ipc://${dir}/pub.zmq`;
  let log = "";
  daemon = spawn(join(buildDir, "server/vkstreamd"), [
    "--model", join(modelsDir, "stories260K.gguf"), "--cpu",
    "--socket", join(dir, "vkstream.sock"), "--zmq", router, "--pub", pub,
    // A prompt longer than 16 tokens is read in several steps, each followed by a progress event.
    "--max-batched-tokens", "16", "--progress-interval", "0",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  daemon.stdout.on("data", (d) => { log += d; });
  daemon.stderr.on("data", (d) => { log += d; });
  const deadline = Date.now() + 60000;
  while (!(await socketAccepts(join(dir, "vkstream.sock")))) {
    if (daemon.exitCode !== null) throw new Error(`vkstreamd exited: ${log}`);
    if (Date.now() > deadline) throw new Error(`vkstreamd did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 20));
  }
});

after(async () => {
  if (daemon && daemon.exitCode === null) {
    const exited = new Promise((r) => daemon.once("exit", r));
    daemon.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function collect(client, accepted) {
  const events = [];
  for await (const ev of follow(client, pub, accepted.topic, accepted.id, { timeoutMs: 20000 })) events.push(ev);
  return events;
}

test("greedy request followed on its PUB topic yields the reference ids", async () => {
  const client = new VkstreamClient(router);
  try {
    const hello = await client.hello();
    assert.equal(hello.version, 1);
    assert.equal(hello.pub_endpoint, pub);
    const accepted = await client.generate({ prompt: PROMPT, temperature: 0, max_tokens: 60 });
    assert.match(accepted.topic, /^vks\.[0-9a-f]{32}$/);
    assert.equal(accepted.prompt_tokens, ref.promptIds.length);
    const events = await collect(client, accepted);
    events.forEach((ev, i) => assert.equal(ev.seq, i));
    assert.deepEqual(events.flatMap((ev) => (ev.type === "token" ? ev.ids : [])), ref.generatedIds);
    assert.equal(PROMPT + events.map((ev) => ev.text ?? "").join("") + "\n", ref.text);
    const last = events[events.length - 1];
    assert.equal(last.type, "finished");
    assert.equal(last.reason, "length");
  } finally {
    client.close();
  }
});

test("a long prompt's progress goes to its topic, and follow yields the numbered events only", async () => {
  const client = new VkstreamClient(router);
  const firehose = new Subscriber({ linger: 0, receiveTimeout: 200 });
  try {
    firehose.connect(pub);
    firehose.subscribe("vks.");
    await new Promise((r) => setTimeout(r, 300)); // the subscription reaches the daemon
    const prompt = "Once upon a time, there was a little girl. ".repeat(8);
    const accepted = await client.generate({ prompt, temperature: 0, max_tokens: 4, ignore_eos: true });
    assert.ok(accepted.prompt_tokens > 32);
    const events = await collect(client, accepted);
    events.forEach((ev, i) => assert.equal(ev.seq, i));
    assert.ok(events.every((ev) => ev.type !== "progress"));
    assert.equal(events.filter((ev) => ev.type === "token").length, 4);
    const progress = [];
    for (;;) {
      let frames;
      try {
        frames = await firehose.receive();
      } catch {
        break; // 200 ms without a message: everything published was read
      }
      const ev = decode(frames[1]);
      if (ev.id === accepted.id && ev.type === "progress") progress.push(ev);
    }
    assert.ok(progress.length >= 2, `progress events: ${progress.length}`);
    progress.forEach((ev) => assert.equal(ev.seq, undefined));
    assert.equal(progress[progress.length - 1].prompt_tokens_done, accepted.prompt_tokens);
  } finally {
    firehose.close();
    client.close();
  }
});

test("a follower arriving after the end still gets the whole stream", async () => {
  const client = new VkstreamClient(router);
  try {
    const accepted = await client.generate({ prompt: PROMPT, temperature: 0, max_tokens: 60 });
    // Wait until the request has finished, then follow.
    for (let i = 0; i < 500; i++) {
      const st = await client.status(accepted.id);
      if (st.state === "finished") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const events = await collect(client, accepted);
    assert.deepEqual(events.flatMap((ev) => (ev.type === "token" ? ev.ids : [])), ref.generatedIds);
  } finally {
    client.close();
  }
});

test("embed returns one unit vector per text, in order", async () => {
  const client = new VkstreamClient(router);
  try {
    const texts = ["Once upon a time", "The cat sat on the mat.", "Once upon a time"];
    const vectors = await client.embed(texts);
    assert.equal(vectors.length, 3);
    for (const v of vectors) {
      assert.equal(v.length, 64);
      assert.ok(Math.abs(v.reduce((s, x) => s + x * x, 0) - 1) < 1e-5);
    }
    assert.deepEqual(vectors[0], vectors[2]);
    assert.notDeepEqual(vectors[0], vectors[1]);
    const raw = await client.embed("Once upon a time", { normalize: false, pooling: "last" });
    assert.equal(raw.length, 1);
    assert.ok(Math.abs(raw[0].reduce((s, x) => s + x * x, 0) - 1) > 1e-3);
    await assert.rejects(client.embed(["x"], { pooling: "max" }),
      (err) => err instanceof VkstreamError && err.code === "invalid_field" && err.field === "pooling");
  } finally {
    client.close();
  }
});

test("errors are typed", async () => {
  const client = new VkstreamClient(router);
  try {
    await assert.rejects(client.generate({ prompt: PROMPT, temperature: -1 }), (err) => {
      assert.ok(err instanceof VkstreamError);
      assert.equal(err.code, "invalid_field");
      assert.equal(err.field, "temperature");
      return true;
    });
    await assert.rejects(client.cancel("no-such-request"), (err) => err instanceof VkstreamError && err.code === "not_found");
  } finally {
    client.close();
  }
});

test("the command-line script prints the reference text", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    join(here, "../bin/vkstream-node.js"), "--zmq", router, "--temperature", "0", "--max-tokens", "60", PROMPT,
  ]);
  assert.equal(PROMPT + stdout, ref.text);
});

// The tool's command line: --help, usage errors without stack traces, "not running" within seconds.
function runTool(args) {
  return new Promise((done) => {
    execFile(process.execPath, [join(here, "../bin/vkstream-node.js"), ...args], (err, stdout, stderr) => {
      done({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

test("vkstream-node --help lists the sampling options", async () => {
  const r = await runTool(["--help"]);
  assert.equal(r.code, 0);
  for (const flag of ["--top-k", "--top-p", "--min-p", "--seed", "--stop", "--logprobs", "--repeat-penalty", "--greedy"]) {
    assert.ok(r.stdout.includes(flag), `${flag} missing from --help`);
  }
});

test("vkstream-node usage errors are one line, exit 2", async () => {
  for (const args of [["--bogus", "x"], [], ["-n", "abc", "hi"], ["--logit-bias", "x", "hi"]]) {
    const r = await runTool(args);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.ok(r.stderr.includes("see vkstream-node --help"), r.stderr);
  }
});

test("vkstream-node says vkstreamd is not running, within seconds", async () => {
  const dir = mkdtempSync(join(tmpdir(), "vks-node-"));
  const start = Date.now();
  const r = await runTool(["--zmq", `ipc://${dir}/router.zmq`, "hi"]);
  rmSync(dir, { recursive: true, force: true });
  assert.equal(r.code, 3, r.stderr);
  assert.ok(Date.now() - start < 5000);
  assert.ok(r.stderr.includes("vkstreamd is not running at ipc://"), r.stderr);
  assert.ok(r.stderr.includes("systemctl --user start vkstream.socket"), r.stderr);
});
