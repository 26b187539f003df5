// The Node.js client's model calls against a fake daemon (a ZeroMQ ROUTER in this process): `model`
// and `keep_alive` go out only when given, models / load / unload resolve with their answers, and a
// refused load rejects with its code. Needs no vkstreamd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Router } from "zeromq";
import { encode, decode } from "@msgpack/msgpack";
import { VkstreamClient, VkstreamError } from "../src/client.js";

let dir;
let router;
let client;
const received = [];

function answerTo(req) {
  const model = req.model ?? "a";
  switch (req.type) {
    case "models":
      return { type: "models", max_loaded: 3, models: [
        { name: "a", path: "/m/a.gguf", loaded: true, pinned: true, default: true, running: 0, expires_in_ms: -1 },
        { name: "b", path: "/m/b.gguf", loaded: false, pinned: false, default: false, running: 0, expires_in_ms: -1 },
      ] };
    case "load":
      if (model === "broken") return { type: "error", code: "model_load_failed", field: "model", message: "not a GGUF" };
      return { type: "loaded", model, load_ms: 12.5 };
    case "unload": return { type: "unloaded", model, was_loaded: true };
    case "generate": case "chat": return { type: "accepted", id: "r1", topic: "vks.0", model };
    case "embed": return { type: "embed", id: "e1", embeddings: [[1, 2]] };
    case "tokenize": return { type: "tokenize", ids: [1, 2] };
    case "detokenize": return { type: "detokenize", text: "ab" };
    case "model": return { type: "model", model: { name: model } };
    default: return { type: "error", code: "unknown_type", field: "type", message: "?" };
  }
}

async function serve() {
  for await (const [peer, payload] of router) {
    const req = decode(payload);
    received.push(req);
    await router.send([peer, encode({ ...answerTo(req), tag: req.tag })]);
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "vks-node-models-"));
  router = new Router({ linger: 0 });
  await router.bind(`ipc://${dir}/router.zmq`);
  serve().catch(() => {}); // ends when the socket closes
  client = new VkstreamClient(`ipc://${dir}/router.zmq`, { timeoutMs: 5000 });
});

after(() => {
  client.close();
  router.close();
  rmSync(dir, { recursive: true, force: true });
});

test("models, load and unload resolve with their answers", async () => {
  const list = await client.models();
  assert.equal(list.max_loaded, 3);
  assert.deepEqual(list.models.map((m) => [m.name, m.loaded, m.default]), [["a", true, true], ["b", false, false]]);
  const loaded = await client.load("b", { keepAlive: 60 });
  assert.deepEqual([loaded.model, loaded.load_ms], ["b", 12.5]);
  assert.equal(received.at(-1).keep_alive, 60);
  await client.load("b");
  assert.equal("keep_alive" in received.at(-1), false);
  assert.equal((await client.unload("b")).was_loaded, true);
  await assert.rejects(client.load("broken"), (err) => err instanceof VkstreamError && err.code === "model_load_failed");
  const sent = received.length;
  await assert.rejects(client.load(""), VkstreamError);
  await assert.rejects(client.unload(""), VkstreamError);
  assert.equal(received.length, sent); // empty names never leave the client
});

test("requests carry model and keep_alive only when given", async () => {
  received.length = 0;
  assert.equal((await client.generate({ prompt: "hi", model: "b", keep_alive: 0 })).model, "b");
  await client.chat([{ role: "user", content: "hi" }], { model: "b" });
  assert.deepEqual(await client.embed("x", { model: "b", keepAlive: -1 }), [[1, 2]]);
  assert.deepEqual(await client.tokenize("ab", { model: "b" }), [1, 2]);
  assert.equal(await client.detokenize([1, 2], { model: "b" }), "ab");
  assert.equal((await client.model("b")).name, "b");
  assert.deepEqual(received.map((r) => r.model), ["b", "b", "b", "b", "b", "b"]);
  assert.equal(received[0].keep_alive, 0);
  assert.equal(received[2].keep_alive, -1);
  assert.equal("keep_alive" in received[1], false);

  received.length = 0;
  assert.equal((await client.generate({ prompt: "hi" })).model, "a");
  await client.embed("x");
  await client.tokenize("ab");
  assert.equal((await client.model()).name, "a");
  for (const r of received) {
    assert.equal("model" in r, false, r.type);
    assert.equal("keep_alive" in r, false, r.type);
  }
});
