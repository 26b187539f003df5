"""End-to-end tests of the Python client against the real daemon (build_dir/server/vkstreamd) on
stories260K.gguf. Registered in ctest with label e2e when the vkstreamd target exists.

Environment: VKSTREAM_BUILD_DIR (build folder), VKSTREAM_MODELS (default ../shared/models beside
the project root), VKSTREAM_E2E_CPU=1 to pass --cpu, VKSTREAM_E2E_REQUIRED=1 (set by ctest) turns a
missing daemon or model into a failure instead of a skip."""
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import vkstream  # noqa: E402
from vkstream import errors  # noqa: E402

PROJECT_ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PROMPT = "Once upon a time"


def models_dir():
    return os.environ.get("VKSTREAM_MODELS") or os.path.join(PROJECT_ROOT, "..", "shared", "models")


def daemon_path():
    build = os.environ.get("VKSTREAM_BUILD_DIR") or os.path.join(PROJECT_ROOT, "build")
    return os.path.join(build, "server", "vkstreamd")


def reference_ids():
    """(prompt ids, 60 greedy generated ids) from the shared reference file."""
    path = os.path.join(models_dir(), "reference", "stories260K_greedy_once_upon_a_time_n64.ids")
    with open(path) as f:
        rows = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return [int(x) for x in rows[0]], [int(x) for x in rows[1]]


class Daemon:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vks-e2e-py-")
        self.socket = os.path.join(self.dir, "vkstream.sock")
        self.router = "ipc://" + os.path.join(self.dir, "router.zmq")
        self.pub = "ipc://" + os.path.join(self.dir, "pub.zmq")
        self.log = open(os.path.join(self.dir, "daemon.log"), "w+")
        args = [daemon_path(), "--model", os.path.join(models_dir(), "stories260K.gguf"), "--socket", self.socket,
                "--router", self.router, "--pub", self.pub]
        if os.environ.get("VKSTREAM_E2E_CPU") == "1":
            args.append("--cpu")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("vkstreamd exited with %s:\n%s" % (self.proc.returncode, self.output()))
            try:
                vkstream.Client.unix(self.socket, timeout=5).close()
                return
            except errors.ConnectionClosedError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("vkstreamd did not become ready:\n" + self.output())
                time.sleep(0.05)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class DaemonE2ETest(unittest.TestCase):
    daemon = None

    @classmethod
    def setUpClass(cls):
        required = os.environ.get("VKSTREAM_E2E_REQUIRED") == "1"
        model = os.path.join(models_dir(), "stories260K.gguf")
        for path, what in ((daemon_path(), "daemon"), (model, "model")):
            if not os.path.exists(path):
                if required:
                    raise RuntimeError("%s not found: %s" % (what, path))
                raise unittest.SkipTest("%s not found: %s" % (what, path))
        cls.daemon = Daemon()
        cls.prompt_ids, cls.greedy_ids = reference_ids()

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()

    def unix(self):
        client = vkstream.Client.unix(self.daemon.socket, timeout=60)
        self.addCleanup(client.close)
        return client

    def long_generation_params(self, client):
        hello = client.hello()
        context = hello["model"]["context_length"]
        limit = hello["limits"].get("max_tokens") or context
        return dict(temperature=0, ignore_eos=True, max_tokens=max(1, min(limit, context - len(self.prompt_ids))))

    # -- greedy output equals the reference -------------------------------------------------------
    def test_embed_sync_and_asyncio(self):
        texts = ["Once upon a time", "The cat sat on the mat.", "Once upon a time"]
        vectors = self.unix().embed(texts)
        self.assertEqual(len(vectors), 3)
        for v in vectors:
            self.assertEqual(len(v), 64)
            self.assertAlmostEqual(sum(x * x for x in v), 1.0, places=5)
        self.assertEqual(vectors[0], vectors[2])
        self.assertNotEqual(vectors[0], vectors[1])
        raw = self.unix().embed("Once upon a time", normalize=False, pooling="last")
        self.assertEqual(len(raw), 1)
        self.assertNotAlmostEqual(sum(x * x for x in raw[0]), 1.0, places=3)
        with self.assertRaises(errors.InvalidFieldError):
            self.unix().embed(["x"], pooling="max")

        async def main():
            client = await vkstream.AsyncClient.unix(self.daemon.socket, timeout=60)
            try:
                return await client.embed(texts)
            finally:
                await client.close()

        self.assertEqual(asyncio.run(main()), vectors)

    def test_tokenize_matches_reference_prompt(self):
        self.assertEqual(self.unix().tokenize(PROMPT), self.prompt_ids)

    def test_greedy_unix(self):
        c = self.unix().complete(PROMPT, temperature=0, max_tokens=len(self.greedy_ids))
        self.assertEqual(c.ids, self.greedy_ids)
        self.assertEqual(c.finish_reason, "length")
        self.assertEqual(c.usage["generated_tokens"], len(self.greedy_ids))
        self.assertEqual([e.seq for e in c.events], list(range(len(c.events))))
        with open(os.path.join(models_dir(), "reference", "stories260K_greedy_once_upon_a_time_n64.txt")) as f:
            reference_text = f.read()
        self.assertTrue(reference_text.startswith(PROMPT + c.text) or (PROMPT + c.text).startswith(reference_text.rstrip("\n")),
                        (PROMPT + c.text)[:200])

    def test_greedy_prompt_ids(self):
        c = self.unix().complete(prompt_ids=self.prompt_ids, temperature=0, max_tokens=len(self.greedy_ids))
        self.assertEqual(c.ids, self.greedy_ids)

    def test_greedy_zmq_dealer(self):
        client = vkstream.Client.zmq(self.daemon.router, timeout=60)
        self.addCleanup(client.close)
        c = client.complete(PROMPT, temperature=0, max_tokens=len(self.greedy_ids))
        self.assertEqual(c.ids, self.greedy_ids)

    def test_greedy_asyncio(self):
        async def main():
            client = await vkstream.AsyncClient.unix(self.daemon.socket, timeout=60)
            try:
                results = await asyncio.gather(*[client.complete(PROMPT, temperature=0, max_tokens=len(self.greedy_ids))
                                                 for _ in range(4)])
            finally:
                await client.close()
            return results

        for c in asyncio.run(main()):
            self.assertEqual(c.ids, self.greedy_ids)

    # -- constrained output (grammar / json_schema) -----------------------------------------------
    def test_json_schema_output_validates(self):
        schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                                   "age": {"type": "integer", "minimum": 0, "maximum": 99}},
                  "required": ["name", "age"], "additionalProperties": False}
        client = self.unix()
        for temperature in (0, 0.8):
            c = client.complete(PROMPT, temperature=temperature, seed=7, max_tokens=100, json_schema=schema)
            self.assertEqual(c.finish_reason, "stop", c.text)
            doc = json.loads(c.text)
            self.assertEqual(set(doc), {"name", "age"}, c.text)
            self.assertIsInstance(doc["age"], int)
            self.assertLessEqual(len(doc["name"]), 10)

    def test_grammar_output_and_bad_grammar_position(self):
        client = self.unix()
        c = client.complete(PROMPT, temperature=0, max_tokens=20, grammar='root ::= " yes" | " no"\n')
        self.assertIn(c.text, (" yes", " no"))
        with self.assertRaises(errors.InvalidFieldError) as ctx:
            client.complete(PROMPT, max_tokens=5, grammar='root ::= [z-a]\n')
        self.assertIn("grammar: line 1, column 11", str(ctx.exception))

    # -- cancel -----------------------------------------------------------------------------------
    def test_cancel_from_second_client(self):
        a = self.unix()
        stream = a.generate(PROMPT, **self.long_generation_params(a))
        for event in stream:
            if event.type == "token":
                break
        self.assertEqual(self.unix().cancel(stream.id)["id"], stream.id)
        rest = list(stream)
        self.assertEqual(rest[-1].type, "finished")
        self.assertEqual(rest[-1].reason, "cancelled")
        with self.assertRaises(errors.NotFoundError):
            self.unix().cancel(stream.id)

    def test_disconnect_cancels_non_detached(self):
        a = vkstream.Client.unix(self.daemon.socket, timeout=60)
        stream = a.generate(PROMPT, **self.long_generation_params(a))
        next(e for e in stream if e.type == "token")
        a.close()
        b = self.unix()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = b.status(stream.id)
            if status["state"] == "finished":
                break
            time.sleep(0.05)
        self.assertEqual(status["state"], "finished")
        self.assertEqual(status["reason"], "cancelled")

    # -- late follow and replay -------------------------------------------------------------------
    def test_late_follow_gets_whole_stream(self):
        client = self.unix()
        accepted = client.submit(PROMPT, temperature=0, max_tokens=len(self.greedy_ids), stream=False, detached=True)
        deadline = time.monotonic() + 60
        while client.status(accepted["id"])["state"] != "finished" and time.monotonic() < deadline:
            time.sleep(0.02)
        with vkstream.Subscriber(self.daemon.pub, client=client, timeout=30) as sub:
            events = list(sub.follow(accepted["id"]))
        self.assertEqual([e.seq for e in events], list(range(len(events))))
        self.assertEqual(events[-1].type, "finished")
        ids = [i for e in events if e.type == "token" for i in e.ids]
        self.assertEqual(ids, self.greedy_ids)
        # The request had finished: everything it followed was catch-up, marked so that firehose
        # subscribers can drop it (PROTOCOL.md); apart from the mark, the replay's events.
        self.assertTrue(all(dict(e).get("catchup") is True for e in events))
        replayed = client.replay_events(accepted["id"])
        unmarked = [{k: v for k, v in dict(e).items() if k != "catchup"} for e in events]
        self.assertEqual([dict(e) for e in replayed], unmarked)

    def test_follow_while_running(self):
        client = self.unix()
        params = self.long_generation_params(client)
        params["max_tokens"] = min(params["max_tokens"], 400)
        accepted = client.submit(PROMPT, stream=False, detached=True, **params)
        with vkstream.Subscriber(self.daemon.pub, client=client, timeout=30) as sub:
            events = list(sub.follow(accepted["id"]))
        self.assertEqual([e.seq for e in events], list(range(len(events))))
        self.assertEqual(events[-1].reason, "length")
        self.assertEqual(sum(len(e.ids) for e in events if e.type == "token"), params["max_tokens"])

    # -- errors are typed -------------------------------------------------------------------------
    def test_errors_are_typed(self):
        client = self.unix()
        with self.assertRaises(errors.InvalidFieldError) as cm:
            client.generate(PROMPT, top_p=0)
        self.assertEqual(cm.exception.field, "top_p")
        with self.assertRaises(errors.NotFoundError):
            client.status("no-such-request")
        with self.assertRaises(errors.NotFoundError):
            client.replay("no-such-request")
        with self.assertRaises(errors.UnknownTypeError):
            client.request({"type": "teleport"})
        with self.assertRaises(errors.MissingFieldError) as cm:
            client.request({"type": "cancel"})
        self.assertEqual(cm.exception.field, "id")
        with self.assertRaises(errors.InvalidFieldError):
            client.request({"type": "generate", "prompt": PROMPT, "max_tokens": "ten"})
        limits = client.hello()["limits"]
        if limits.get("max_prompt_tokens"):
            with self.assertRaises(errors.PromptTooLongError):
                client.generate(prompt_ids=[1] * (limits["max_prompt_tokens"] + 1))
        rid = "py-e2e-dup"
        client.submit(PROMPT, id=rid, temperature=0, max_tokens=2, stream=False)
        with self.assertRaises(errors.AlreadyExistsError):
            client.submit(PROMPT, id=rid, max_tokens=2, stream=False)
        # The connection still works.
        self.assertEqual(client.tokenize(PROMPT), self.prompt_ids)

    def test_stats_and_model(self):
        client = self.unix()
        model = client.model()
        self.assertEqual(model["vocab_size"], 512)
        stats = client.stats()
        self.assertIn("ttft_ms", stats)
        self.assertIn("vkstream_requests_waiting", client.stats("prometheus"))
        self.assertEqual(client.detokenize(self.prompt_ids), PROMPT)


if __name__ == "__main__":
    unittest.main()
