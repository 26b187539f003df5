"""In-process fake vkstream server for pure-protocol tests of the Python client.

It speaks the wire format of docs/PROTOCOL.md (Unix socket frames, ZeroMQ ROUTER, XPUB with
catch-up on subscribe) with scripted behaviour chosen by the prompt text:
  "bad"      → error invalid_field (field top_p)
  "overload" → error overloaded with retry_after_ms
  "fail"     → accepted, then an `error` stream event and finished(reason error)
  "gap"      → the stream on the connection skips seq 3 (replay has it)
  "dup"      → every token event is sent twice
  "slow"     → untagged slow_consumer error, then the connection is closed
  "huge"     → a frame header larger than the client's max, then close
  "hold"     → accepted + queued only; finishes when cancelled
anything else: queued, scheduled, one token per character (id = ord(c)), finished(length).
Models (docs/PROTOCOL.md "Models"): "fake" (default, pinned, loaded), "other" (loads), "broken"
(load fails with model_load_failed); any other `model` is not_found.
"""
import os
import socket
import struct
import tempfile
import threading

import msgpack

HEADER = struct.Struct(">I")


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True)


class Brain:
    """Request handling shared by the transports. `emit(payload)` sends to the requester,
    `publish(topic, payload)` to the XPUB socket."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counter = 0
        self.events = {}   # id → list of payload bytes
        self.topics = {}   # topic → id
        self.held = {}     # id → emit function of the submitter
        self.publish = lambda topic, payload: None
        self.received = []
        self.loaded = {"fake"}

    MODELS = ("broken", "fake", "other")

    def _unknown_model(self, req, answer):
        """Answers not_found (True) when the request names a model the fake does not serve."""
        name = req.get("model")
        if name is None or name in self.MODELS:
            return False
        answer({"type": "error", "code": "not_found", "field": "model",
                "message": "no model %r; served: %s" % (name, ", ".join(self.MODELS))})
        return True

    def _models(self, req, answer):
        t = req.get("type")
        if t == "models":
            answer({"type": "models", "max_loaded": 2, "models": [
                {"name": m, "path": "/models/%s.gguf" % m, "size_bytes": 1000 + i, "loaded": m in self.loaded,
                 "loading": False, "pinned": m == "fake", "default": m == "fake", "running": 0,
                 "resident_bytes": 5000 if m in self.loaded else 0,
                 "expires_in_ms": -1 if m == "fake" else (300000 if m in self.loaded else -1), "device": "cpu"}
                for i, m in enumerate(self.MODELS)]})
        elif self._unknown_model(req, answer):
            pass
        elif t == "load" and req["model"] == "broken":
            answer({"type": "error", "code": "model_load_failed", "field": "model", "message": "not a GGUF"})
        elif t == "load":
            was = req["model"] in self.loaded
            self.loaded.add(req["model"])
            answer({"type": "loaded", "model": req["model"], "load_ms": 0.0 if was else 5.0})
        else:  # unload
            was = req["model"] in self.loaded
            self.loaded.discard(req["model"])
            answer({"type": "unloaded", "model": req["model"], "was_loaded": was})

    def _new_request(self):
        self.counter += 1
        rid = "req-%d" % self.counter
        topic = "vks.%032x" % (0xABC000 + self.counter)
        self.events[rid] = []
        self.topics[topic] = rid
        return rid, topic

    def _event(self, rid, topic, body):
        body = dict(body)
        body["id"] = rid
        body["seq"] = len(self.events[rid])
        payload = pack(body)
        self.events[rid].append(payload)
        self.publish(topic, payload)
        return payload

    def topic_of(self, rid):
        for topic, r in self.topics.items():
            if r == rid:
                return topic
        return None

    def handle(self, req, emit):
        """Returns False to ask the transport to close the connection."""
        with self.lock:
            self.received.append(req)
            tag = req.get("tag")

            def answer(body):
                if tag is not None:
                    body["tag"] = tag
                emit(pack(body))

            t = req.get("type")
            if t == "hello":
                answer({"type": "hello", "version": 1, "server": "fake", "model": {"name": "fake", "vocab_size": 512},
                        "limits": {"max_frame_bytes": 1 << 20}, "pub_endpoint": "", "router_endpoint": "",
                        "retention_ms": 1000})
            elif t == "generate":
                if self._unknown_model(req, answer):
                    return True
                return self._generate(req, answer, emit)
            elif t in ("models", "load", "unload"):
                self._models(req, answer)
            elif t == "cancel":
                rid = req.get("id")
                if rid in self.held:
                    held_emit = self.held.pop(rid)
                    answer({"type": "cancelled", "id": rid})
                    held_emit(self._event(rid, self.topic_of(rid), {"type": "finished", "reason": "cancelled",
                                                                    "usage": {}, "timings": {}}))
                else:
                    answer({"type": "error", "code": "not_found", "message": "no such request", "id": rid})
            elif t == "status":
                rid = req.get("id")
                if rid not in self.events:
                    answer({"type": "error", "code": "not_found", "message": "no such request", "id": rid})
                else:
                    answer({"type": "status", "id": rid, "state": "running" if rid in self.held else "finished",
                            "topic": self.topic_of(rid), "last_seq": len(self.events[rid]) - 1})
            elif t == "stats":
                if req.get("format") == "prometheus":
                    answer({"type": "stats", "format": "prometheus", "text": "vkstream_requests_waiting 0\n"})
                else:
                    answer({"type": "stats", "format": "map", "stats": {"waiting": 0, "running": len(self.held)}})
            elif t == "tokenize":
                answer({"type": "tokenize", "ids": ([1] if req.get("add_bos", True) else []) + [ord(c) for c in req["text"]]})
            elif t == "detokenize":
                answer({"type": "detokenize", "text": "".join(chr(i) for i in req["ids"])})
            elif t == "embed":  # vector = [len(text), normalize, pooling given]
                if req.get("pooling") not in (None, "mean", "cls", "last"):
                    answer({"type": "error", "code": "invalid_field", "message": "bad pooling", "field": "pooling"})
                else:
                    answer({"type": "embed", "id": "e1", "usage": {"prompt_tokens": sum(len(x) for x in req["input"])},
                            "embeddings": [[float(len(x)), float(req.get("normalize", True)),
                                            float("pooling" in req)] for x in req["input"]]})
            elif t == "model":
                if not self._unknown_model(req, answer):
                    answer({"type": "model", "model": {"name": req.get("model", "fake"), "vocab_size": 512}})
            elif t == "replay":
                rid = req.get("id")
                if rid not in self.events:
                    answer({"type": "error", "code": "not_found", "message": "no such request", "id": rid})
                else:
                    start = req.get("from_seq", 0)
                    stored = self.events[rid][start:]
                    chunk = stored[:2]  # truncate to two events per answer to exercise following
                    answer({"type": "replay", "id": rid, "events": [msgpack.unpackb(p) for p in chunk],
                            "next_seq": start + len(chunk), "finished": rid not in self.held,
                            "truncated": len(chunk) < len(stored)})
            else:
                answer({"type": "error", "code": "unknown_type", "field": "type", "message": "unknown request type"})
            return True

    def _generate(self, req, answer, emit):
        prompt = req.get("prompt", "")
        if prompt == "bad":
            answer({"type": "error", "code": "invalid_field", "field": "top_p", "message": "top_p: must be in (0, 1]"})
            return True
        if prompt == "overload":
            answer({"type": "error", "code": "overloaded", "message": "queue full", "retry_after_ms": 250})
            return True
        if prompt == "slow":
            emit(pack({"type": "error", "code": "slow_consumer", "message": "output bound exceeded"}))
            return False
        if prompt == "huge":
            emit(None)  # transport writes an oversized header
            return False
        rid, topic = self._new_request()
        if req.get("id"):
            self.topics[topic] = req["id"]
            self.events[req["id"]] = self.events.pop(rid)
            rid = req["id"]
        answer({"type": "accepted", "id": rid, "topic": topic, "queue_position": 0, "prompt_tokens": len(prompt) + 1,
                "detached": bool(req.get("detached")), "model": req.get("model", "fake")})
        stream = req.get("stream", True)
        send = emit if stream else (lambda payload: None)
        send(self._event(rid, topic, {"type": "queued", "queue_position": 0}))
        if prompt == "hold":
            self.held[rid] = send
            return True
        send(self._event(rid, topic, {"type": "scheduled"}))
        if prompt == "progress":  # not numbered, not in the log (docs/PROTOCOL.md 5.8), and a newer daemon's event
            for done in (3, 8, 9):
                send(pack({"type": "progress", "id": rid, "prompt_tokens": 9, "prompt_tokens_done": done,
                           "cached_tokens": 0}))
            send(pack({"type": "from_the_future", "id": rid, "text": "not a token"}))
        if prompt == "fail":
            send(self._event(rid, topic, {"type": "error", "code": "device_error", "message": "device lost"}))
            send(self._event(rid, topic, {"type": "finished", "reason": "error", "usage": {}, "timings": {}}))
            return True
        for k, ch in enumerate(prompt[: req.get("max_tokens", 256)]):
            body = {"type": "token", "ids": [ord(ch)], "text": ch}
            if k == 0:
                body["first"] = True
            payload = self._event(rid, topic, body)
            if prompt == "gap" and k == 1:   # seq 3 never reaches the connection
                continue
            send(payload)
            if prompt == "dup":
                send(payload)
        send(self._event(rid, topic, {"type": "finished", "reason": "length",
                                      "usage": {"prompt_tokens": len(prompt) + 1, "cached_tokens": 0,
                                                "generated_tokens": len(prompt)},
                                      "timings": {"queue_ms": 0.5, "ttft_ms": 1.0, "total_ms": 2.0}}))
        return True


class FakeUnixServer:
    """Unix-socket front end: one thread per connection."""

    def __init__(self, brain=None):
        self.brain = brain or Brain()
        self.dir = tempfile.mkdtemp(prefix="vks-fake-")
        self.path = os.path.join(self.dir, "vkstream.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.threads = []
        self.running = True
        self.accept_thread = threading.Thread(target=self._accept, daemon=True)
        self.accept_thread.start()

    def _accept(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn):
        buf = b""
        send_lock = threading.Lock()

        def emit(payload):
            with send_lock:
                try:
                    if payload is None:
                        conn.sendall(HEADER.pack(0x7FFFFFFF))
                    else:
                        conn.sendall(HEADER.pack(len(payload)) + payload)
                except OSError:
                    pass

        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (n,) = HEADER.unpack_from(buf)
                    if len(buf) < 4 + n:
                        break
                    req = msgpack.unpackb(buf[4:4 + n], raw=False, strict_map_key=False)
                    buf = buf[4 + n:]
                    if not self.brain.handle(req, emit):
                        return
        finally:
            conn.close()

    def close(self):
        self.running = False
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            os.unlink(self.path)
            os.rmdir(self.dir)
        except OSError:
            pass


class FakeZmqServer:
    """ROUTER + XPUB front end in one thread; re-publishes a topic's events on subscribe."""

    def __init__(self, brain=None):
        import zmq

        self.zmq = zmq
        self.brain = brain or Brain()
        self.dir = tempfile.mkdtemp(prefix="vks-fakezmq-")
        self.router_endpoint = "ipc://" + os.path.join(self.dir, "router.zmq")
        self.pub_endpoint = "ipc://" + os.path.join(self.dir, "pub.zmq")
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.bind(self.router_endpoint)
        self.pub = self.ctx.socket(zmq.XPUB)
        self.pub.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.pub.bind(self.pub_endpoint)
        self.drop_seqs = set()     # (id, seq) pairs never published live: tests gap filling
        self.brain.publish = self._publish
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _publish(self, topic, payload):
        event = msgpack.unpackb(payload)
        if (event["id"], event["seq"]) in self.drop_seqs:
            return
        self.pub.send_multipart([topic.encode(), payload])

    def _loop(self):
        poller = self.zmq.Poller()
        poller.register(self.router, self.zmq.POLLIN)
        poller.register(self.pub, self.zmq.POLLIN)
        while self.running:
            for sock, _ in poller.poll(50):
                if sock is self.router:
                    frames = self.router.recv_multipart()
                    identity, payload = frames[0], frames[-1]
                    envelope = frames[:-1]
                    req = msgpack.unpackb(payload, raw=False, strict_map_key=False)
                    self.brain.handle(req, lambda p, env=envelope: p is not None and self.router.send_multipart(env + [p]))
                    del identity
                else:
                    sub = self.pub.recv()
                    if sub[:1] == b"\x01":
                        topic = sub[1:].decode()
                        rid = self.brain.topics.get(topic)
                        if rid is not None:  # catch-up from seq 0, as the real daemon does
                            for payload in self.brain.events[rid]:
                                self._publish(topic, payload)

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        self.router.close(0)
        self.pub.close(0)
        self.ctx.term()
