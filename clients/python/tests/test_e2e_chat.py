"""End-to-end tests of the Python client's chat against the real daemon: stories260K (no chat
template: the ChatML fallback), and synthetic models with the Llama 3 and Qwen2.5 vocabularies and
templates (vks-make-model --vocab-from), whose replies must stop at <|eot_id|> / <|im_end|>.
Environment as test_e2e_daemon.py."""
import os
import signal
import shutil
import subprocess
import tempfile
import time
import unittest

from test_e2e_daemon import daemon_path, models_dir

import vkstream  # noqa: E402
from vkstream import errors  # noqa: E402


def tool_path(name):
    return os.path.join(os.path.dirname(os.path.dirname(daemon_path())), "tools", name)


class ModelDaemon:
    """vkstreamd --cpu on `model` with its sockets in a fresh folder."""

    def __init__(self, model):
        self.dir = tempfile.mkdtemp(prefix="vks-e2e-chat-")
        self.socket = os.path.join(self.dir, "vkstream.sock")
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.log = open(self.log_path, "w+")
        args = [daemon_path(), "--model", model, "--cpu", "--socket", self.socket,
                "--router", "ipc://" + os.path.join(self.dir, "router.zmq"),
                "--pub", "ipc://" + os.path.join(self.dir, "pub.zmq")]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                output = self.output()
                self.log.close()
                shutil.rmtree(self.dir, ignore_errors=True)
                raise RuntimeError("vkstreamd exited with %s:\n%s" % (self.proc.returncode, output))
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
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def client(self):
        return vkstream.Client.unix(self.socket, timeout=60)

    def socket_dir_pub(self):
        return "ipc://" + os.path.join(self.dir, "pub.zmq")

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


def require(path, what):
    if not os.path.exists(path):
        if os.environ.get("VKSTREAM_E2E_REQUIRED") == "1":
            raise RuntimeError("%s not found: %s" % (what, path))
        raise unittest.SkipTest("%s not found: %s" % (what, path))


class ChatStoriesTest(unittest.TestCase):
    daemon = None

    @classmethod
    def setUpClass(cls):
        require(daemon_path(), "daemon")
        model = os.path.join(models_dir(), "stories260K.gguf")
        require(model, "model")
        cls.daemon = ModelDaemon(model)

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()

    def test_chat_streams_a_reply(self):
        with self.daemon.client() as c:
            done = c.chat([{"role": "user", "content": "Once upon a time"}], max_tokens=6, temperature=0).result()
            self.assertEqual(done.finish_reason, "length")
            self.assertEqual(done.usage["generated_tokens"], 6)
            expected = c.tokenize("<|im_start|>user\nOnce upon a time<|im_end|>\n<|im_start|>assistant\n",
                                  add_bos=True, parse_special=True)
            self.assertEqual(done.usage["prompt_tokens"], len(expected))

    def test_second_turn_reuses_the_cached_prefix(self):
        system = ("You tell short stories about a little girl named Lily and her dog, who live in a small "
                  "house near the park where they play every day.")
        history = [("system", system), ("user", "Tell me a story.")]
        with self.daemon.client() as c:
            first = c.chat(history, max_tokens=5, temperature=0).result()
            history += [("assistant", first.text), ("user", "What happened next?")]
            second = c.chat(history, max_tokens=5, temperature=0).result()
        self.assertGreater(second.usage["prompt_tokens"], first.usage["prompt_tokens"])
        self.assertGreaterEqual(second.usage["cached_tokens"], 16)

    def test_template_errors_name_the_field_and_line(self):
        with self.daemon.client() as c:
            with self.assertRaises(errors.InvalidFieldError) as caught:
                c.chat([("user", "hi")], max_tokens=2, chat_template="ok\n{{ nope(") .result()
        self.assertEqual(caught.exception.code, "invalid_field")
        self.assertEqual(caught.exception.field, "chat_template")
        self.assertIn("template line 2", str(caught.exception))


class ChatEndOfTurnTest(unittest.TestCase):
    """Synthetic llama-shape models with a real vocabulary and chat template: a reply that wants to
    end its turn (a large logit bias on the end-of-turn token) stops there; without the stop the
    bias would make it repeat that token until max_tokens."""

    def run_model(self, vocab_file, end_of_turn_text, bos_by_default):
        require(daemon_path(), "daemon")
        make_model = tool_path("vks-make-model")
        require(make_model, "vks-make-model")
        vocab = os.path.join(models_dir(), vocab_file)
        require(vocab, "vocabulary")
        folder = tempfile.mkdtemp(prefix="vks-chat-model-")
        self.addCleanup(shutil.rmtree, folder, True)
        model = os.path.join(folder, "model.gguf")
        subprocess.run([make_model, "--preset", "tiny", "--dim", "64", "--hidden", "128", "--layers", "1",
                        "--heads", "2", "--kv-heads", "1", "--context", "512", "--tied", "--vocab-from", vocab,
                        "-q", "-o", model], check=True)
        try:
            daemon = ModelDaemon(model)
        except RuntimeError as e:
            if "tokenizer" in str(e) and "gpt2" in str(e):
                self.skipTest("this build has no BPE tokenizer yet: %s" % str(e)[-200:])
            raise
        self.addCleanup(daemon.stop)
        self.assertIn("chat template: model", daemon.output())
        with daemon.client() as c:
            self.check_bos_follows_the_model(c, bos_by_default)
            ids = c.tokenize(end_of_turn_text, add_bos=False, parse_special=True)
            self.assertEqual(len(ids), 1, "%s should be one control token" % end_of_turn_text)
            done = c.chat([("user", "Hi")], max_tokens=20, logit_bias={ids[0]: 100.0}).result()
            self.assertEqual(done.finish_reason, "stop")
            self.assertLessEqual(done.usage["generated_tokens"], 1)
            self.assertNotIn(end_of_turn_text, done.text)
            # Without the end-of-turn token (ignore_eos) the same bias runs to max_tokens.
            done = c.chat([("user", "Hi")], max_tokens=3, logit_bias={ids[0]: 100.0}, ignore_eos=True).result()
            self.assertEqual(done.finish_reason, "length")

    def check_bos_follows_the_model(self, c, bos_by_default):
        """Unset add_bos follows the GGUF's add_bos_token, as llama.cpp does: Llama 3 prepends
        <|begin_of_text|>, Qwen prepends nothing (a forced true would add <|endoftext|>)."""
        info = c.model()
        self.assertEqual(info["add_bos"], bos_by_default)
        bos = info["bos"]
        plain = c.tokenize("Hello world", add_bos=False)
        with_bos = c.tokenize("Hello world", add_bos=True)
        self.assertEqual(with_bos, [bos] + plain)
        self.assertEqual(c.tokenize("Hello world"), with_bos if bos_by_default else plain)
        done = c.generate("Hello world", max_tokens=1, temperature=0).result()
        self.assertEqual(done.usage["prompt_tokens"], len(with_bos if bos_by_default else plain))
        self.assertEqual(c.embed(["Hello world"])[0] == c.embed(["Hello world"], add_bos=True)[0], bos_by_default)

    def test_llama3_stops_at_eot_id(self):
        self.run_model("llama3-vocab.gguf", "<|eot_id|>", bos_by_default=True)

    def test_qwen_stops_at_im_end(self):
        self.run_model("qwen2-vocab.gguf", "<|im_end|>", bos_by_default=False)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]},
                                     "days": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["city", "days"], "additionalProperties": False}}}]


class ChatToolEventsTest(unittest.TestCase):
    """A chat with tools over the Unix socket: a logit bias on Qwen's <tool_call> token makes the
    random model start a call at once, the lazy grammar of tool_choice auto holds it to a valid
    call, and the reply's call arrives as a tool_call event (index, id, name, arguments) on the
    connection and on the request's PUB topic, before a finished event with reason tool_calls."""

    def test_tool_call_events_on_the_socket_and_the_pub_topic(self):
        import json
        require(daemon_path(), "daemon")
        make_model = tool_path("vks-make-model")
        require(make_model, "vks-make-model")
        vocab = os.path.join(models_dir(), "qwen2-vocab.gguf")
        require(vocab, "vocabulary")
        folder = tempfile.mkdtemp(prefix="vks-chat-tools-")
        self.addCleanup(shutil.rmtree, folder, True)
        model = os.path.join(folder, "model.gguf")
        subprocess.run([make_model, "--dim", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--hidden", "64",
                        "--context", "1024", "--tied", "--vocab-from", vocab, "-q", "-o", model], check=True)
        daemon = ModelDaemon(model)
        self.addCleanup(daemon.stop)
        with daemon.client() as c:
            marker = c.tokenize("<tool_call>", add_bos=False, parse_special=True)
            self.assertEqual(len(marker), 1)
            messages = [{"role": "user", "content": "Weather in Rome?"}]
            for seed in (1, 2):
                stream = c.chat(messages, tools=TOOLS, parallel_tool_calls=False, seed=seed, temperature=1.0,
                                max_tokens=120, logit_bias={marker[0]: 100.0})
                done = stream.result()
                self.assertEqual(done.finish_reason, "tool_calls", done.text)
                self.assertEqual(len(done.tool_calls), 1, done.text)
                call = done.tool_calls[0]
                self.assertEqual(call["index"], 0)
                self.assertEqual(call["id"], "call_%s_0" % stream.id)
                self.assertEqual(call["name"], "get_weather")
                args = json.loads(call["arguments"])
                self.assertEqual(set(args), {"city", "days"})
                self.assertIn(args["city"], ("Paris", "Rome"))
                self.assertTrue(1 <= args["days"] <= 9)
                self.assertTrue(done.text.startswith("<tool_call>"), done.text)
                # The event follows the token that closed the call's JSON (the close marker may follow).
                types = [e.type for e in done.events]
                self.assertEqual(types.count("tool_call"), 1)
                at = types.index("tool_call")
                self.assertEqual(types[at - 1], "token")
                self.assertEqual(types[-1], "finished")
                before = "".join(e.text for e in done.events[:at] if e.type == "token")
                self.assertLess(done.text.rindex("}"), len(before), done.text)  # the call's JSON closed
                self.assertTrue(len(before) < len(done.text) or types[at + 1] == "finished")
                self.assertEqual([e.seq for e in done.events], list(range(len(done.events))))

                # The PUB topic (re-published from seq 0 to a late subscriber) has the same events.
                with vkstream.Subscriber(daemon.socket_dir_pub(), client=c, timeout=30) as sub:
                    seen = list(sub.follow(stream.id))
                # (re-published events are marked catchup)
                self.assertEqual([{k: v for k, v in e.items() if k != "catchup"} for e in seen],
                                 [dict(e) for e in done.events])

            # Without tools the same bias is only text: no tool_call event, finish reason as ever.
            done = c.chat(messages, seed=1, temperature=1.0, max_tokens=4, logit_bias={marker[0]: 100.0}).result()
            self.assertEqual(done.tool_calls, [])
            self.assertEqual(done.finish_reason, "length")


if __name__ == "__main__":
    unittest.main()
