"""asyncio client over the Unix socket (asyncio streams) or ZeroMQ DEALER (zmq.asyncio)."""
import asyncio
import itertools

from . import calls, errors
from .client import Completion
from .protocol import DEFAULT_MAX_FRAME_BYTES, HEADER, PROTOCOL_VERSION, SeqTracker, encode_frame, pack, unpack
from .transport import default_router_endpoint, default_socket_path


class _UnixConn:
    def __init__(self, reader, writer, max_frame_bytes):
        self._reader, self._writer, self._max = reader, writer, max_frame_bytes

    async def send(self, payload):
        self._writer.write(encode_frame(payload, self._max))
        await self._writer.drain()

    async def recv(self):
        try:
            header = await self._reader.readexactly(4)
            (n,) = HEADER.unpack(header)
            if n == 0 or n > self._max:
                raise errors.FrameTooLargeError("server frame of %d bytes" % n)
            return await self._reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError):
            raise errors.ConnectionClosedError("server closed the connection") from None

    async def close(self):
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass


class _ZmqConn:
    def __init__(self, endpoint, max_frame_bytes):
        import zmq
        import zmq.asyncio

        self._ctx = zmq.asyncio.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)
        self._max = max_frame_bytes

    async def send(self, payload):
        if len(payload) > self._max:
            raise errors.FrameTooLargeError("message of %d bytes exceeds max_frame_bytes" % len(payload))
        await self._sock.send(payload)

    async def recv(self):
        frames = await self._sock.recv_multipart()
        return frames[-1]

    async def close(self):
        self._sock.close(0)
        self._ctx.term()


class AsyncStream:
    """Async iterator over one request's events (dedup by seq, gaps filled by replay)."""

    def __init__(self, client, accepted, queue, raise_on_error=True):
        self._client = client
        self.accepted = accepted
        self.id = accepted["id"]
        self.topic = accepted.get("topic")
        self.completion = Completion(self.id)
        self._queue = queue
        self._tracker = SeqTracker()
        self._pending = []
        self._raise_on_error = raise_on_error

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            if self._pending:
                event = self._pending.pop(0)
            elif self._tracker.finished:
                self._client._queues.pop(self.id, None)
                raise StopAsyncIteration
            else:
                event = await self._client._get_event(self._queue)
            kind = self._tracker.classify(event)
            if kind == SeqTracker.DUPLICATE:
                continue
            if kind == SeqTracker.GAP:
                self._pending = await self._client.replay_events(self.id, self._tracker.next_seq) + [event]
                continue
            self._tracker.accept(event)
            self.completion.add(event)
            if event.type == "error" and self._raise_on_error:
                self._client._queues.pop(self.id, None)  # its finished event will be dropped
                raise errors.error_from_message(event)
            return event

    async def result(self):
        async for _ in self:
            pass
        return self.completion

    async def cancel(self):
        return await self._client.cancel(self.id)


class AsyncClient:
    """One connection; a reader task routes answers (by tag) and events (by request id)."""

    def __init__(self, conn, timeout=60.0):
        self._conn = conn
        self.timeout = timeout
        self._tags = itertools.count(1)
        self._waiters = {}
        self._queues = {}
        self._closed_error = None
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def unix(cls, path=None, timeout=60.0, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        path = path or default_socket_path()
        try:
            reader, writer = await asyncio.open_unix_connection(path)
        except OSError as exc:
            raise errors.ConnectionClosedError("cannot connect to %s: %s" % (path, exc)) from None
        return cls(_UnixConn(reader, writer, max_frame_bytes), timeout)

    @classmethod
    async def zmq(cls, endpoint=None, timeout=60.0, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        return cls(_ZmqConn(endpoint or default_router_endpoint(), max_frame_bytes), timeout)

    async def close(self):
        self._reader.cancel()
        try:
            await self._reader
        except (asyncio.CancelledError, errors.VkstreamError):
            pass
        await self._conn.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _read_loop(self):
        fatal = None
        try:
            while True:
                msg = unpack(await self._conn.recv())
                if msg.is_event:
                    queue = self._queues.get(msg.get("id"))
                    if queue is not None:
                        queue.put_nowait(msg)
                    continue
                tag = msg.get("tag")
                if tag is None:
                    if msg.type == "error":
                        fatal = errors.error_from_message(msg)
                    continue
                if msg.type == "accepted" and msg.get("id") is not None:
                    self._queues.setdefault(msg["id"], asyncio.Queue())
                waiter = self._waiters.pop(tag, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(msg)
        except errors.VkstreamError as exc:
            self._fail(fatal or exc)
        except asyncio.CancelledError:
            self._fail(errors.ConnectionClosedError("client closed"))
            raise

    def _fail(self, exc):
        self._closed_error = exc
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_exception(exc)
        self._waiters.clear()
        for queue in self._queues.values():
            queue.put_nowait(exc)

    async def _get_event(self, queue):
        try:
            item = await asyncio.wait_for(queue.get(), self.timeout)
        except asyncio.TimeoutError:
            raise errors.ClientTimeoutError("no event within %.3g s" % self.timeout) from None
        if isinstance(item, Exception):
            queue.put_nowait(item)  # later readers see it too
            raise item
        return item

    async def request(self, req):
        if self._closed_error is not None:
            raise self._closed_error
        tag = next(self._tags)
        req = dict(req)
        req["tag"] = tag
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[tag] = waiter
        await self._conn.send(pack(req))
        try:
            answer = await asyncio.wait_for(waiter, self.timeout)
        except asyncio.TimeoutError:
            self._waiters.pop(tag, None)
            raise errors.ClientTimeoutError("no answer within %.3g s" % self.timeout) from None
        if answer.type == "error":
            raise errors.error_from_message(answer)
        return answer

    # -- requests (each written once in calls.py) --------------------------------------------------
    async def call(self, call):
        """Runs one of calls.py's request generators over this connection."""
        return await calls.drive_async(call, self.request)

    async def hello(self, version=PROTOCOL_VERSION, client="vkstream-python-asyncio"):
        return await self.call(calls.hello(version, client))

    def _accepted(self, accepted, params):
        if params.get("stream") is False:
            self._queues.pop(accepted["id"], None)  # no events come on this connection: keep no queue
        return accepted

    def _stream(self, accepted, raise_on_error):
        queue = self._queues.setdefault(accepted["id"], asyncio.Queue())
        return AsyncStream(self, accepted, queue, raise_on_error=raise_on_error)

    async def submit(self, prompt=None, **params):
        return self._accepted(await self.call(calls.submit(prompt, **params)), params)

    async def generate(self, prompt=None, *, raise_on_error=True, **params):
        if params.get("stream") is False:
            raise TypeError("generate() streams; use submit(stream=False) for fire-and-forget")
        return self._stream(await self.submit(prompt, **params), raise_on_error)

    async def complete(self, prompt=None, **params):
        return await (await self.generate(prompt, **params)).result()

    async def submit_chat(self, messages, **params):
        return self._accepted(await self.call(calls.submit_chat(messages, **params)), params)

    async def chat(self, messages, *, raise_on_error=True, **params):
        """Streams the reply to a conversation (see Client.chat)."""
        if params.get("stream") is False:
            raise TypeError("chat() streams; use submit_chat(stream=False) for fire-and-forget")
        return self._stream(await self.submit_chat(messages, **params), raise_on_error)

    async def cancel(self, request_id):
        return await self.call(calls.cancel(request_id))

    async def status(self, request_id):
        return await self.call(calls.status(request_id))

    async def stats(self, format="map"):  # noqa: A002
        return await self.call(calls.stats(format))

    async def tokenize(self, text, add_bos=None, parse_special=False, model=None):
        return await self.call(calls.tokenize(text, add_bos, parse_special, model))

    async def detokenize(self, ids, model=None):
        return await self.call(calls.detokenize(ids, model))

    async def embed(self, texts, normalize=True, pooling=None, add_bos=None, model=None, keep_alive=None):
        """One embedding (list of floats) per text, in order (see Client.embed)."""
        return await self.call(calls.embed(texts, normalize, pooling, add_bos, model, keep_alive))

    async def model(self, model=None):
        return await self.call(calls.model(model))

    async def models(self):
        return await self.call(calls.models())

    async def load(self, model, keep_alive=None):
        return await self.call(calls.load(model, keep_alive))

    async def unload(self, model):
        return await self.call(calls.unload(model))

    async def replay(self, request_id, from_seq=0):
        return await self.call(calls.replay(request_id, from_seq))

    async def replay_events(self, request_id, from_seq=0):
        return await self.call(calls.replay_events(request_id, from_seq))
