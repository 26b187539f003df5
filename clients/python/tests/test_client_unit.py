"""Pure-protocol tests of the Python client against the in-process fake server (no daemon)."""
import asyncio
import json
import os
import re
import socket
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import msgpack  # noqa: E402

import vkstream  # noqa: E402
from vkstream import calls, errors  # noqa: E402
from vkstream.protocol import FrameDecoder, SeqTracker, encode_frame, generate_request, pack, unpack  # noqa: E402

from fake_server import Brain, FakeUnixServer, FakeZmqServer  # noqa: E402


class FramingTest(unittest.TestCase):
    def test_documented_example_bytes(self):
        # docs/PROTOCOL.md 12.1
        frame = encode_frame(pack({"type": "model"}))
        self.assertEqual(frame.hex(" "), "00 00 00 0c 81 a4 74 79 70 65 a5 6d 6f 64 65 6c")
        frame = encode_frame(pack({"type": "cancel", "id": "job-1", "tag": 7}))
        self.assertEqual(frame[:4], b"\x00\x00\x00\x1b")

    def test_decoder_byte_by_byte_and_batches(self):
        stream = b"".join(encode_frame(pack({"type": "token", "seq": k})) for k in range(5))
        dec = FrameDecoder()
        out = []
        for b in stream:
            out.extend(dec.feed(bytes([b])))
        self.assertEqual([unpack(p)["seq"] for p in out], list(range(5)))
        dec = FrameDecoder()
        self.assertEqual(len(dec.feed(stream + stream[:3])), 5)
        self.assertEqual(dec.buffered, 3)

    def test_decoder_rejects_oversized_before_payload(self):
        dec = FrameDecoder(max_frame_bytes=10)
        with self.assertRaises(errors.FrameTooLargeError):
            dec.feed(struct.pack(">I", 11))
        with self.assertRaises(errors.ProtocolViolationError):
            FrameDecoder().feed(b"\x00\x00\x00\x00")
        with self.assertRaises(errors.FrameTooLargeError):
            encode_frame(b"x" * 11, max_frame_bytes=10)

    def test_unpack_rejects_non_maps(self):
        for payload in (b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"no_type": 1}), msgpack.packb({"type": 3})):
            with self.assertRaises(errors.ProtocolViolationError):
                unpack(payload)

    def test_generate_request_validation(self):
        req = generate_request("hi", temperature=0, logit_bias={"5": 1}, stop="x", seed=None)
        self.assertEqual(req["type"], "generate")
        self.assertIsInstance(req["temperature"], float)
        self.assertEqual(req["logit_bias"], {5: 1.0})
        self.assertNotIn("seed", req)
        with self.assertRaises(TypeError):
            generate_request("hi", temprature=0)
        with self.assertRaises(TypeError):
            generate_request("hi", prompt_ids=[1])
        with self.assertRaises(TypeError):
            generate_request()

    def test_speculative_is_a_request_field(self):
        # False (off for the request), True or a draft length, as the server takes it.
        self.assertIs(generate_request("x", speculative=False)["speculative"], False)
        self.assertEqual(generate_request("x", speculative=4)["speculative"], 4)

    def test_model_and_keep_alive_in_request_maps(self):
        req = generate_request("x", model="m", keep_alive=30)
        self.assertEqual((req["model"], req["keep_alive"]), ("m", 30.0))
        self.assertIsInstance(req["keep_alive"], float)
        self.assertNotIn("model", generate_request("x"))
        chat = vkstream.protocol.chat_request([("user", "hi")], model="m", keep_alive=-1)
        self.assertEqual((chat["type"], chat["model"], chat["keep_alive"]), ("chat", "m", -1.0))
        emb = vkstream.protocol.embed_request("x", model="m", keep_alive=0)
        self.assertEqual((emb["model"], emb["keep_alive"]), ("m", 0.0))

    def test_generate_request_constraints(self):
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        req = generate_request("hi", json_schema=schema)
        self.assertEqual(json.loads(req["json_schema"]), schema)  # sent as JSON text
        self.assertEqual(generate_request("hi", json_schema='{"type":"string"}')["json_schema"], '{"type":"string"}')
        self.assertEqual(generate_request("hi", grammar='root ::= "a"')["grammar"], 'root ::= "a"')
        with self.assertRaises(TypeError):
            generate_request("hi", json_schema=3)

    def test_chat_request_tools_and_tool_turns(self):
        tools = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}]
        calls = [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]
        req = vkstream.protocol.chat_request(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": calls},
             {"role": "tool", "content": "sunny", "tool_call_id": "c1", "name": "w"}],
            tools=tools, tool_choice="function", tool_name="w", parallel_tool_calls=False)
        self.assertEqual(json.loads(req["tools"]), tools)  # sent as JSON text
        self.assertEqual((req["tool_choice"], req["tool_name"], req["parallel_tool_calls"]), ("function", "w", False))
        self.assertEqual(req["messages"][1]["content"], "")
        self.assertEqual(json.loads(req["messages"][1]["tool_calls"]), calls)
        self.assertEqual((req["messages"][2]["tool_call_id"], req["messages"][2]["name"]), ("c1", "w"))
        self.assertNotIn("tools", vkstream.protocol.chat_request([("user", "hi")]))

    def test_completion_collects_tool_call_events(self):
        done = vkstream.client.Completion("r")
        for event in ({"type": "token", "id": "r", "seq": 0, "ids": [1], "text": "<tool_call>..."},
                      {"type": "tool_call", "id": "r", "seq": 1, "index": 0, "call_id": "call_r_0", "name": "w",
                       "arguments": "{}"},
                      {"type": "finished", "id": "r", "seq": 2, "reason": "tool_calls"}):
            done.add(vkstream.protocol.Message(event))
        self.assertEqual(done.tool_calls, [{"index": 0, "id": "call_r_0", "name": "w", "arguments": "{}"}])
        self.assertEqual(done.finish_reason, "tool_calls")

    def test_seq_tracker(self):
        t = SeqTracker()
        self.assertEqual(t.classify({"seq": 0}), SeqTracker.NEW)
        t.accept({"seq": 0, "type": "queued"})
        self.assertEqual(t.classify({"seq": 0}), SeqTracker.DUPLICATE)
        self.assertEqual(t.classify({"seq": 2}), SeqTracker.GAP)
        t.accept({"seq": 1, "type": "finished"})
        self.assertTrue(t.finished)

    def test_error_classes_cover_every_documented_code(self):
        codes = ["bad_frame", "frame_too_large", "invalid_request", "unknown_type", "missing_field", "invalid_field",
                 "unsupported_version", "not_found", "already_exists", "overloaded", "too_many_requests",
                 "prompt_too_long", "capacity_exceeded", "cancelled", "deadline_exceeded", "unsupported",
                 "unauthorized", "shutting_down", "slow_consumer", "device_error", "model_load_failed", "internal",
                 "pull_failed"]
        for code in codes:
            exc = errors.error_from_message({"type": "error", "code": code, "message": "m", "field": "f"})
            self.assertEqual(exc.code, code)
            self.assertIsNot(type(exc), errors.VkstreamError, code)
            self.assertEqual(exc.field, "f")
        exc = errors.error_from_message({"type": "error", "code": "from_the_future", "message": "m"})
        self.assertIs(type(exc), errors.VkstreamError)
        self.assertEqual(exc.code, "from_the_future")

    def test_error_classes_match_the_protocol_document(self):
        doc_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "PROTOCOL.md")
        with open(doc_path) as f:
            doc = f.read()
        section = doc[doc.index("## 6. Error codes"):doc.index("## 7.")]
        documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))
        self.assertGreater(len(documented), 15)
        self.assertEqual(documented, set(errors.ERROR_CLASSES))

    def test_error_answer_vs_stream_error(self):
        self.assertFalse(unpack(pack({"type": "error", "code": "x", "id": "a"})).is_event)
        self.assertTrue(unpack(pack({"type": "error", "code": "x", "id": "a", "seq": 3})).is_event)


class CallsTest(unittest.TestCase):
    """calls.py: each request once, driven the same way by the sync and the asyncio client."""

    PAGES = {0: {"events": [{"seq": 0}, {"seq": 1}], "truncated": True, "next_seq": 2},
             2: {"events": [{"seq": 2}], "truncated": True, "next_seq": 3},
             3: {"events": [{"seq": 3}], "truncated": False, "next_seq": 4}}

    def test_replay_events_follows_truncated_pages(self):
        asked = []

        def answer_of(request):
            asked.append(request["from_seq"])
            self.assertEqual(request["type"], "replay")
            self.assertEqual(request["id"], "r1")
            return self.PAGES[request["from_seq"]]

        events = calls.drive(calls.replay_events("r1"), answer_of)
        self.assertEqual(asked, [0, 2, 3])
        self.assertEqual([e.seq for e in events], [0, 1, 2, 3])

        async def answer_async(request):
            return self.PAGES[request["from_seq"]]

        events = asyncio.run(calls.drive_async(calls.replay_events("r1", 2), answer_async))
        self.assertEqual([e.seq for e in events], [2, 3])

    def test_a_page_that_does_not_advance_ends_the_replay(self):
        stuck = {"events": [], "truncated": True, "next_seq": 0}
        self.assertEqual(calls.drive(calls.replay_events("r1"), lambda request: stuck), [])

    def test_answers_are_unwrapped(self):
        self.assertEqual(calls.drive(calls.stats("prometheus"), lambda r: {"text": "x 1", "stats": None}), "x 1")
        self.assertEqual(calls.drive(calls.stats(), lambda r: {"stats": {"a": 1}}), {"a": 1})
        self.assertEqual(calls.drive(calls.tokenize("hi"), lambda r: {"ids": [r["text"]]}), ["hi"])


class UnixClientTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeUnixServer()
        self.client = vkstream.Client.unix(self.server.path, timeout=10)

    def tearDown(self):
        self.client.close()
        self.server.close()

    def test_hello_and_simple_calls(self):
        self.assertEqual(self.client.hello()["version"], 1)
        self.assertEqual(self.client.tokenize("ab"), [1, 97, 98])
        self.assertEqual(self.client.tokenize("ab", add_bos=False), [97, 98])
        self.assertEqual(self.client.detokenize([104, 105]), "hi")
        self.assertEqual(self.client.embed(["ab", "abc"]), [[2.0, 1.0, 0.0], [3.0, 1.0, 0.0]])
        self.assertEqual(self.client.embed("abcd", normalize=False, pooling="last"), [[4.0, 0.0, 1.0]])
        with self.assertRaises(errors.InvalidFieldError):
            self.client.embed(["a"], pooling="max")
        self.assertEqual(self.client.model()["name"], "fake")
        self.assertEqual(self.client.stats()["waiting"], 0)
        self.assertIn("vkstream_requests_waiting", self.client.stats("prometheus"))
        tags = [r.get("tag") for r in self.server.brain.received]
        self.assertEqual(len(set(tags)), len(tags))  # every request had its own tag

    def test_requests_name_their_model_and_keep_alive(self):
        accepted = self.client.submit("hi", model="other", keep_alive=0)
        self.assertEqual(accepted["model"], "other")
        self.assertEqual(self.client.tokenize("a", model="other"), [1, 97])
        self.assertEqual(self.client.detokenize([97], model="other"), "a")
        self.assertEqual(self.client.embed("ab", model="other", keep_alive=-1), [[2.0, 1.0, 0.0]])
        self.assertEqual(self.client.model(model="other")["name"], "other")
        self.assertEqual(self.client.submit("hi")["model"], "fake")  # no model: the default
        sent = [r for r in self.server.brain.received if r["type"] in ("generate", "tokenize", "detokenize", "embed")]
        self.assertEqual([r.get("model") for r in sent], ["other", "other", "other", "other", None])
        self.assertEqual(sent[0]["keep_alive"], 0.0)
        self.assertIsInstance(sent[0]["keep_alive"], float)  # seconds as a float on the wire
        self.assertEqual(sent[3]["keep_alive"], -1.0)
        self.assertNotIn("keep_alive", sent[4])
        with self.assertRaises(errors.NotFoundError) as caught:
            self.client.submit("hi", model="nope")
        self.assertEqual(caught.exception.field, "model")

    def test_models_load_and_unload(self):
        listing = self.client.models()
        self.assertEqual(listing["max_loaded"], 2)
        by_name = {m["name"]: m for m in listing["models"]}
        self.assertEqual(sorted(by_name), ["broken", "fake", "other"])
        self.assertTrue(by_name["fake"]["default"] and by_name["fake"]["loaded"])
        self.assertFalse(by_name["other"]["loaded"])
        loaded = self.client.load("other", keep_alive=60)
        self.assertEqual((loaded["type"], loaded["model"], loaded["load_ms"]), ("loaded", "other", 5.0))
        self.assertEqual(self.server.brain.received[-1]["keep_alive"], 60.0)
        self.assertEqual(self.client.load("other")["load_ms"], 0.0)  # already loaded
        self.assertNotIn("keep_alive", self.server.brain.received[-1])
        self.assertTrue({m["name"]: m for m in self.client.models()["models"]}["other"]["loaded"])
        self.assertEqual(self.client.unload("other")["was_loaded"], True)
        self.assertEqual(self.client.unload("other")["was_loaded"], False)
        with self.assertRaises(errors.ModelLoadFailedError):
            self.client.load("broken")
        with self.assertRaises(errors.NotFoundError):
            self.client.unload("nope")
        with self.assertRaises(TypeError):
            self.client.load("")

    def test_generate_streams_events_in_order(self):
        stream = self.client.generate("Once", temperature=0)
        events = list(stream)
        self.assertEqual([e.type for e in events], ["queued", "scheduled", "token", "token", "token", "token", "finished"])
        self.assertEqual([e.seq for e in events], list(range(7)))
        self.assertTrue(events[2].first)
        self.assertEqual(stream.completion.text, "Once")
        self.assertEqual(stream.completion.ids, [ord(c) for c in "Once"])
        self.assertEqual(stream.completion.finish_reason, "length")
        self.assertEqual(stream.completion.usage["generated_tokens"], 4)
        self.assertTrue(stream.topic.startswith("vks."))

    def test_progress_and_unknown_events_are_skipped(self):
        c = self.client.complete("progress")
        self.assertEqual(c.text, "progress")
        self.assertEqual([e.seq for e in c.events], list(range(len(c.events))))
        self.assertNotIn("progress", [e.type for e in c.events])
        self.assertNotIn("from_the_future", [e.type for e in c.events])

    def test_duplicates_are_dropped(self):
        c = self.client.complete("dup")
        self.assertEqual(c.text, "dup")
        self.assertEqual([e.seq for e in c.events], list(range(len(c.events))))

    def test_gap_is_filled_by_replay(self):
        c = self.client.complete("gap")
        self.assertEqual(c.text, "gap")
        self.assertEqual([e.seq for e in c.events], list(range(len(c.events))))
        self.assertTrue(any(r.get("type") == "replay" for r in self.server.brain.received))

    def test_interleaved_streams_on_one_connection(self):
        a = self.client.submit("first")
        b = self.client.submit("second")
        self.assertEqual(self.client.events(b).result().text, "second")
        self.assertEqual(self.client.events(a).result().text, "first")

    def test_error_answers_are_typed(self):
        with self.assertRaises(errors.InvalidFieldError) as cm:
            self.client.generate("bad")
        self.assertEqual(cm.exception.field, "top_p")
        with self.assertRaises(errors.OverloadedError) as cm:
            self.client.generate("overload")
        self.assertEqual(cm.exception.retry_after_ms, 250)
        with self.assertRaises(errors.NotFoundError) as cm:
            self.client.cancel("nope")
        self.assertEqual(cm.exception.request_id, "nope")
        with self.assertRaises(errors.NotFoundError):
            self.client.status("nope")
        with self.assertRaises(errors.UnknownTypeError):
            self.client.request({"type": "teleport"})
        # The connection is still usable after errors.
        self.assertEqual(self.client.complete("ok").text, "ok")

    def test_stream_error_event_raises_typed(self):
        stream = self.client.generate("fail")
        with self.assertRaises(errors.DeviceError):
            for _ in stream:
                pass
        self.assertEqual(stream.completion.finish_reason, "error")
        stream = self.client.generate("fail", raise_on_error=False)
        types = [e.type for e in stream]
        self.assertEqual(types[-2:], ["error", "finished"])

    def test_cancel_and_status(self):
        stream = self.client.generate("hold")
        self.assertEqual(next(stream).type, "queued")
        self.assertEqual(self.client.status(stream.id)["state"], "running")
        self.assertEqual(self.client.cancel(stream.id)["id"], stream.id)
        rest = list(stream)
        self.assertEqual(rest[-1].type, "finished")
        self.assertEqual(rest[-1].reason, "cancelled")
        self.assertEqual(self.client.status(stream.id)["state"], "finished")

    def test_replay_follows_truncation(self):
        accepted = self.client.submit("abcdef", stream=False)
        events = self.client.replay_events(accepted["id"])
        self.assertEqual([e["seq"] for e in events], list(range(9)))
        self.assertEqual(events[-1]["type"], "finished")
        self.assertEqual([e["seq"] for e in self.client.replay_events(accepted["id"], 7)], [7, 8])

    def test_untagged_error_before_close_is_raised(self):
        with self.assertRaises(errors.SlowConsumerError):
            self.client.generate("slow")

    def test_oversized_server_frame(self):
        with self.assertRaises(errors.FrameTooLargeError):
            self.client.generate("huge")

    def test_server_gone(self):
        self.server.close()
        client = None
        with self.assertRaises(errors.ConnectionClosedError):
            client = vkstream.Client.unix(self.server.path)
        self.assertIsNone(client)

    def test_timeout(self):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = self.server.path + ".silent"
        listener.bind(path)
        listener.listen(1)
        try:
            client = vkstream.Client.unix(path, timeout=0.2)
            with self.assertRaises(errors.ClientTimeoutError):
                client.hello()
            client.close()
        finally:
            listener.close()
            os.unlink(path)


class ZmqClientTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeZmqServer()
        self.client = vkstream.Client.zmq(self.server.router_endpoint, timeout=10)

    def tearDown(self):
        self.client.close()
        self.server.close()

    def test_dealer_generate_and_errors(self):
        self.assertEqual(self.client.hello()["server"], "fake")
        c = self.client.complete("zmq!")
        self.assertEqual(c.text, "zmq!")
        self.assertEqual(c.finish_reason, "length")
        with self.assertRaises(errors.InvalidFieldError):
            self.client.generate("bad")

    def test_subscriber_late_follow_gets_whole_stream(self):
        accepted = self.client.submit("late", stream=False)  # finished before anyone subscribes
        with vkstream.Subscriber(self.server.pub_endpoint, client=self.client, timeout=10) as sub:
            events = list(sub.follow(accepted["id"]))
        self.assertEqual([e.seq for e in events], list(range(len(events))))
        self.assertEqual("".join(e.text for e in events if e.type == "token"), "late")
        self.assertEqual(events[-1].type, "finished")

    def test_subscriber_fills_gaps_with_replay(self):
        accepted = self.client.submit("hold", stream=False)
        rid = accepted["id"]
        self.server.drop_seqs = {(rid, 1)}  # the cancel's finished (seq 1) is never published
        with vkstream.Subscriber(self.server.pub_endpoint, client=self.client, timeout=10, poll_replay_s=0.2) as sub:
            follow = sub.follow(topic=accepted["topic"], request_id=rid)
            first = next(follow)
            self.assertEqual(first.seq, 0)
            self.client.cancel(rid)
            rest = list(follow)
        self.assertEqual([e.seq for e in rest], [1])
        self.assertEqual(rest[0].reason, "cancelled")

    def test_subscriber_rejects_bad_topic(self):
        with vkstream.Subscriber(self.server.pub_endpoint) as sub:
            with self.assertRaises(ValueError):
                next(sub.follow(topic="req.123"))


class AsyncClientTest(unittest.TestCase):
    def test_async_unix(self):
        server = FakeUnixServer()

        async def main():
            client = await vkstream.AsyncClient.unix(server.path, timeout=10)
            try:
                self.assertEqual((await client.hello())["version"], 1)
                stream = await client.generate("async")
                events = [e async for e in stream]
                self.assertEqual(events[-1].type, "finished")
                self.assertEqual(stream.completion.text, "async")
                # Two concurrent generations on one connection.
                a, b = await asyncio.gather(client.complete("one"), client.complete("two"))
                self.assertEqual((a.text, b.text), ("one", "two"))
                self.assertEqual((await client.complete("dup")).text, "dup")
                self.assertEqual((await client.complete("gap")).text, "gap")
                with self.assertRaises(errors.InvalidFieldError):
                    await client.generate("bad")
                with self.assertRaises(errors.NotFoundError):
                    await client.cancel("missing")
                self.assertEqual(await client.tokenize("a"), [1, 97])
                self.assertEqual(await client.detokenize([97]), "a")
                self.assertEqual(await client.embed(["xy"]), [[2.0, 1.0, 0.0]])
                self.assertEqual(await client.tokenize("a", model="other"), [1, 97])
                self.assertEqual((await client.load("other", keep_alive=5))["model"], "other")
                self.assertEqual(len((await client.models())["models"]), 3)
                self.assertTrue((await client.unload("other"))["was_loaded"])
                self.assertEqual((await client.model(model="other"))["name"], "other")
                with self.assertRaises(errors.ModelLoadFailedError):
                    await client.load("broken")
                stream = await client.generate("fail")
                with self.assertRaises(errors.DeviceError):
                    async for _ in stream:
                        pass
            finally:
                await client.close()

        try:
            asyncio.run(main())
        finally:
            server.close()

    def test_async_zmq(self):
        server = FakeZmqServer()

        async def main():
            client = await vkstream.AsyncClient.zmq(server.router_endpoint, timeout=10)
            try:
                self.assertEqual((await client.complete("zz")).text, "zz")
            finally:
                await client.close()

        try:
            asyncio.run(main())
        finally:
            server.close()

    def test_async_connection_closed(self):
        server = FakeUnixServer()

        async def main():
            client = await vkstream.AsyncClient.unix(server.path, timeout=10)
            try:
                with self.assertRaises(errors.SlowConsumerError):
                    await client.generate("slow")
            finally:
                await client.close()

        try:
            asyncio.run(main())
        finally:
            server.close()


class NotRunningTest(unittest.TestCase):
    """Nothing at the endpoint: fail within seconds, saying vkstreamd is not running and how to start it."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="vks-py-notrunning-")

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def assert_not_running(self, make, where):
        import time
        start = time.monotonic()
        with self.assertRaises(errors.NotRunningError) as ctx:
            make().hello()
        self.assertLess(time.monotonic() - start, 5.0)
        self.assertIn("vkstreamd is not running at " + where, str(ctx.exception))
        self.assertIn("systemctl --user start vkstream.socket", str(ctx.exception))
        self.assertIsInstance(ctx.exception, errors.ConnectionClosedError)  # old except clauses still work

    def test_zmq_ipc_without_socket_file(self):
        endpoint = "ipc://" + os.path.join(self.dir, "router.zmq")
        self.assert_not_running(lambda: vkstream.Client.zmq(endpoint), endpoint)

    def test_zmq_ipc_with_stale_socket_file(self):
        path = os.path.join(self.dir, "router.zmq")
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(path)
        stale.close()  # the file stays, nobody listens
        self.assert_not_running(lambda: vkstream.Client.zmq("ipc://" + path), "ipc://" + path)

    def test_unix_socket_missing(self):
        path = os.path.join(self.dir, "vkstream.sock")
        self.assert_not_running(lambda: vkstream.Client.unix(path), path)

    def test_hint_names_the_system_scope_for_run_vkstream(self):
        from vkstream.transport import not_running_hint
        self.assertIn("sudo systemctl start vkstream.socket", not_running_hint("/run/vkstream/vkstream.sock"))
        self.assertIn("systemctl --user start", not_running_hint("/run/user/1000/vkstream/vkstream.sock"))


if __name__ == "__main__":
    unittest.main()
