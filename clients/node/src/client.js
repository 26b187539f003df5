// A small vkstreamd client written from docs/PROTOCOL.md alone: requests over a ZeroMQ DEALER
// socket (one msgpack map per message, answers matched by "tag"), and a follower of a request's
// PUB topic on the XPUB socket that drops duplicates by seq and fills gaps through `replay`.
import { Dealer, Subscriber } from "zeromq";
import { encode, decode } from "@msgpack/msgpack";
import { join } from "node:path";

export const PROTOCOL_VERSION = 1;

// The `model` / `keep_alive` fields (docs/PROTOCOL.md 3.12) when given: absent means the default
// model and the daemon's --keep-alive. keep_alive is seconds (0: unload once idle, negative: never).
function modelFields(model, keepAlive) {
  const fields = {};
  if (model !== undefined && model !== null) fields.model = String(model);
  if (keepAlive !== undefined && keepAlive !== null) fields.keep_alive = Number(keepAlive);
  return fields;
}

// An `error` answer or stream event from the daemon.
export class VkstreamError extends Error {
  constructor(message, { code = "internal", field = "", requestId = "", retryAfterMs = 0 } = {}) {
    super(message);
    this.name = "VkstreamError";
    this.code = code;
    this.field = field;
    this.requestId = requestId;
    this.retryAfterMs = retryAfterMs;
  }

  static fromMessage(m) {
    return new VkstreamError(`${m.code}: ${m.message}`, {
      code: m.code,
      field: m.field ?? "",
      requestId: m.id ?? "",
      retryAfterMs: m.retry_after_ms ?? 0,
    });
  }
}

// Default endpoints: $XDG_RUNTIME_DIR/vkstream/{router,pub}.zmq, else /run/vkstream/.
export function defaultEndpoints() {
  const dir = process.env.XDG_RUNTIME_DIR ? join(process.env.XDG_RUNTIME_DIR, "vkstream") : "/run/vkstream";
  return { router: `ipc://${join(dir, "router.zmq")}`, pub: `ipc://${join(dir, "pub.zmq")}` };
}

export class VkstreamClient {
  constructor(routerEndpoint, { timeoutMs = 30000 } = {}) {
    this.timeoutMs = timeoutMs;
    this.dealer = new Dealer({ linger: 0 });
    this.dealer.connect(routerEndpoint);
    this.nextTag = 1;
    this.pending = new Map(); // tag -> { resolve, reject, timer }
    this.closed = false;
    this.receiving = this.#receiveLoop();
  }

  async #receiveLoop() {
    try {
      for await (const frames of this.dealer) {
        // A ROUTER answering REQ-style adds an empty delimiter: the map is the last part.
        const msg = decode(frames[frames.length - 1]);
        const waiter = typeof msg.tag === "number" ? this.pending.get(msg.tag) : undefined;
        if (!waiter) continue; // stream events of requests submitted with stream: true are ignored here
        this.pending.delete(msg.tag);
        clearTimeout(waiter.timer);
        if (msg.type === "error") waiter.reject(VkstreamError.fromMessage(msg));
        else waiter.resolve(msg);
      }
    } catch (err) {
      if (!this.closed) for (const w of this.pending.values()) w.reject(err);
    }
  }

  // Sends a request and resolves with its answer (rejects with VkstreamError on an error answer).
  call(type, fields = {}) {
    const tag = this.nextTag++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(tag);
        reject(new VkstreamError(`no answer to ${type} within ${this.timeoutMs} ms`, { code: "timeout" }));
      }, this.timeoutMs);
      this.pending.set(tag, { resolve, reject, timer });
      this.dealer.send(encode({ type, tag, ...fields })).catch((err) => {
        this.pending.delete(tag);
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  hello() {
    return this.call("hello", { version: PROTOCOL_VERSION, client: "vkstream-node" });
  }

  // Submits a generate request; resolves with the `accepted` answer ({id, topic, model, ...}).
  // Defaults to stream: false: the events are then read from the PUB topic (follow()). Options are
  // the wire fields, `model` and `keep_alive` (seconds) included.
  generate(options) {
    return this.call("generate", { stream: false, ...options });
  }

  // Submits a conversation (messages: [{role, content}, ...]); the daemon renders the model's chat
  // template and stops at its end-of-turn tokens. Options are generate's (minus prompt), plus
  // add_generation_prompt and chat_template. Resolves with the `accepted` answer; follow() its topic.
  chat(messages, options = {}) {
    return this.call("chat", { stream: false, ...options, messages });
  }

  status(id) {
    return this.call("status", { id });
  }

  // One embedding per text (an array of numbers each), in order (docs/PROTOCOL.md 3.11). pooling:
  // undefined (the model's), "mean", "cls" or "last"; normalize: false gives the raw vectors.
  async embed(texts, { normalize = true, pooling, addBos, model, keepAlive } = {}) {
    const fields = { input: typeof texts === "string" ? [texts] : [...texts], normalize, ...modelFields(model, keepAlive) };
    if (pooling !== undefined) fields.pooling = pooling;
    if (addBos !== undefined) fields.add_bos = addBos;
    return (await this.call("embed", fields)).embeddings;
  }

  // Token ids of `text` with `model`'s tokenizer (undefined: the default model's).
  async tokenize(text, { addBos, parseSpecial = false, model } = {}) {
    const fields = { text, parse_special: parseSpecial, ...modelFields(model) };
    if (addBos !== undefined) fields.add_bos = addBos;
    return (await this.call("tokenize", fields)).ids;
  }

  async detokenize(ids, { model } = {}) {
    return (await this.call("detokenize", { ids: [...ids], ...modelFields(model) })).text;
  }

  // The model info map of `model` (undefined: the default model).
  async model(model) {
    return (await this.call("model", modelFields(model))).model;
  }

  // Every model the daemon can serve: {models: [{name, path, loaded, loading, pinned, default, ...}], max_loaded}.
  models() {
    return this.call("models");
  }

  // Loads `model` now; resolves with {model, load_ms} once it is loaded (rejects with code
  // model_load_failed or not_found when it cannot be).
  load(model, { keepAlive } = {}) {
    if (!model) return Promise.reject(new VkstreamError("load needs a model name", { code: "invalid_field", field: "model" }));
    return this.call("load", modelFields(model, keepAlive));
  }

  // Unloads `model` once its running requests finish; resolves with {model, was_loaded} at once.
  unload(model) {
    if (!model) return Promise.reject(new VkstreamError("unload needs a model name", { code: "invalid_field", field: "model" }));
    return this.call("unload", modelFields(model));
  }

  cancel(id) {
    return this.call("cancel", { id });
  }

  replay(id, fromSeq = 0) {
    return this.call("replay", { id, from_seq: fromSeq });
  }

  close() {
    this.closed = true;
    for (const w of this.pending.values()) clearTimeout(w.timer);
    this.dealer.close();
  }
}

// Yields every event of request `id` in seq order, exactly once, ending with `finished`. Events
// come from the PUB topic (the daemon sends a late subscriber everything published so far);
// duplicates are dropped by seq, and a gap or a silent interval is filled through replay.
export async function* follow(client, pubEndpoint, topic, id, { timeoutMs = 30000, gapCheckMs = 500 } = {}) {
  const sub = new Subscriber({ linger: 0, receiveTimeout: gapCheckMs });
  sub.connect(pubEndpoint);
  sub.subscribe(topic);
  let expected = 0;
  const ahead = new Map(); // seq -> event
  let lastProgress = Date.now();

  const hold = (ev) => {
    if (typeof ev.seq === "number" && ev.seq >= expected && !ahead.has(ev.seq)) ahead.set(ev.seq, ev);
  };
  const fillGap = async () => {
    let from = expected;
    for (;;) {
      const r = await client.replay(id, from);
      for (const ev of r.events) hold(ev);
      if (!r.truncated || r.events.length === 0 || r.next_seq <= from) return;
      from = r.next_seq;
    }
  };

  try {
    for (;;) {
      while (ahead.has(expected)) {
        const ev = ahead.get(expected);
        ahead.delete(expected);
        expected += 1;
        lastProgress = Date.now();
        yield ev;
        if (ev.type === "finished") return;
      }
      if (Date.now() - lastProgress > timeoutMs) {
        throw new VkstreamError(`no event of request ${id} within ${timeoutMs} ms`, { code: "timeout" });
      }
      let frames;
      try {
        frames = await sub.receive();
      } catch (err) {
        if (err.code !== "EAGAIN") throw err;
        await fillGap(); // silence: ask whether we missed something
        continue;
      }
      if (frames.length !== 2 || frames[0].toString() !== topic) continue;
      const ev = decode(frames[1]);
      // A long prompt being read: not numbered and not yielded (docs/PROTOCOL.md 5.8), but the
      // request is not silent.
      if (ev.type === "progress") {
        lastProgress = Date.now();
        continue;
      }
      const gap = ev.seq > expected;
      hold(ev);
      if (gap && !ahead.has(expected)) await fillGap();
    }
  } finally {
    sub.close();
  }
}
