"""Blocking client: request/answer calls and streaming generation over one transport.

Not thread-safe: use one Client per thread (or the asyncio client)."""
import collections
import itertools

from . import errors
from . import calls
from .protocol import PROTOCOL_VERSION, SeqTracker, pack, unpack
from .transport import UnixTransport, ZmqTransport


class Completion:
    """The outcome of a whole generation."""

    def __init__(self, request_id):
        self.id = request_id
        self.ids = []
        self.text = ""
        self.finish_reason = None
        self.usage = {}
        self.timings = {}
        self.logprobs = []
        self.tool_calls = []  # a chat reply with tools: its tool_call events, in order
        self.events = []

    def add(self, event):
        self.events.append(event)
        if event.type == "token":
            self.ids.extend(event.ids or [])
            self.text += event.text or ""
            self.logprobs.extend(event.logprobs or [])
        elif event.type == "tool_call":
            self.tool_calls.append({"index": event.index, "id": event.call_id, "name": event.name,
                                    "arguments": event.arguments})
        elif event.type == "finished":
            self.finish_reason = event.reason
            self.usage = event.usage or {}
            self.timings = event.timings or {}

    def __repr__(self):
        return "Completion(id=%r, reason=%r, tokens=%d)" % (self.id, self.finish_reason, len(self.ids))


class Stream:
    """Iterator over the events of one request submitted on this client's connection.

    Duplicates are dropped by seq; a gap is filled through `replay`. Iteration ends after the
    `finished` event. With raise_on_error, a stream `error` event raises its typed exception."""

    def __init__(self, client, accepted, raise_on_error=True):
        self._client = client
        self.accepted = accepted
        self.id = accepted["id"]
        self.topic = accepted.get("topic")
        self.completion = Completion(self.id)
        self._tracker = SeqTracker()
        self._pending = collections.deque()
        self._raise_on_error = raise_on_error

    @property
    def finished(self):
        return self._tracker.finished

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            if self._pending:
                event = self._pending.popleft()
            elif self._tracker.finished:
                self._client._forget(self.id)
                raise StopIteration
            else:
                event = self._client._next_event(self.id)
            kind = self._tracker.classify(event)
            if kind == SeqTracker.DUPLICATE:
                continue
            if kind == SeqTracker.GAP:
                self._pending.extendleft(reversed(self._client.replay_events(self.id, self._tracker.next_seq)))
                self._pending.append(event)
                continue
            self._tracker.accept(event)
            self.completion.add(event)
            if event.type == "error" and self._raise_on_error:
                self._drain_after_error()
                raise errors.error_from_message(event)
            return event

    def _drain_after_error(self):
        # The finished event follows an error; consume it so the connection stays clean.
        try:
            while not self._tracker.finished:
                event = self._client._next_event(self.id)
                if self._tracker.classify(event) == SeqTracker.NEW:
                    self._tracker.accept(event)
                    self.completion.add(event)
        except errors.VkstreamError:
            pass
        self._client._forget(self.id)

    def result(self):
        """Consumes the rest of the stream and returns the Completion."""
        for _ in self:
            pass
        return self.completion

    def cancel(self):
        return self._client.cancel(self.id)


class Client:
    """Speaks the vkstream protocol over a UnixTransport or ZmqTransport."""

    def __init__(self, transport, timeout=60.0):
        self.transport = transport
        self.timeout = timeout
        self._tags = itertools.count(1)
        self._answers = {}
        self._events = {}        # request id → deque of events (requests streamed to us)
        self._fatal = None        # untagged error received before the server closed

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def unix(cls, path=None, timeout=60.0, **kwargs):
        return cls(UnixTransport(path, **kwargs), timeout=timeout)

    @classmethod
    def zmq(cls, endpoint=None, timeout=60.0, **kwargs):
        return cls(ZmqTransport(endpoint, **kwargs), timeout=timeout)

    def close(self):
        self.transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- plumbing ---------------------------------------------------------------------------------
    def _pump(self, timeout):
        try:
            payload = self.transport.recv(timeout)
        except errors.ConnectionClosedError:
            if self._fatal is not None:
                raise self._fatal from None
            raise
        msg = unpack(payload)
        if msg.is_event:
            queue = self._events.get(msg.get("id"))
            if queue is not None:
                queue.append(msg)
            return
        tag = msg.get("tag")
        if tag is None:
            # An untagged answer: an error the server sends before closing (frame_too_large,
            # slow_consumer, unauthorized) or for a request it could not parse at all.
            if msg.type == "error":
                self._fatal = errors.error_from_message(msg)
            return
        if msg.type == "accepted" and msg.get("id") is not None:
            self._events.setdefault(msg["id"], collections.deque())
        self._answers[tag] = msg

    def request(self, req, timeout=None):
        """Sends one request map and returns its answer; a server `error` raises its typed exception."""
        tag = next(self._tags)
        req = dict(req)
        req["tag"] = tag
        self.transport.send(pack(req))
        timeout = self.timeout if timeout is None else timeout
        while tag not in self._answers:
            self._pump(timeout)
        answer = self._answers.pop(tag)
        if answer.type == "error":
            raise errors.error_from_message(answer)
        return answer

    def _next_event(self, request_id):
        queue = self._events.setdefault(request_id, collections.deque())
        while not queue:
            self._pump(self.timeout)
        return queue.popleft()

    def _forget(self, request_id):
        self._events.pop(request_id, None)

    # -- requests (each written once in calls.py) --------------------------------------------------
    def call(self, call):
        """Runs one of calls.py's request generators over this connection."""
        return calls.drive(call, self.request)

    def hello(self, version=PROTOCOL_VERSION, client="vkstream-python"):
        return self.call(calls.hello(version, client))

    def _accepted(self, accepted, params):
        if params.get("stream") is False:
            self._forget(accepted["id"])  # no events come on this connection: keep no queue
        return accepted

    def submit(self, prompt=None, **params):
        """Sends a generate and returns the `accepted` answer (events are left queued on this
        connection unless stream=False; iterate them with events(id))."""
        return self._accepted(self.call(calls.submit(prompt, **params)), params)

    def generate(self, prompt=None, *, raise_on_error=True, **params):
        """Submits a generation and returns a Stream: iterate it for events (token, finished, ...)."""
        if params.get("stream") is False:
            raise TypeError("generate() streams; use submit(stream=False) for fire-and-forget")
        return Stream(self, self.submit(prompt, **params), raise_on_error=raise_on_error)

    def complete(self, prompt=None, **params):
        """Generates to the end and returns the Completion (text, ids, finish_reason, usage)."""
        return self.generate(prompt, **params).result()

    def submit_chat(self, messages, **params):
        """Sends a chat request (see protocol.chat_request) and returns the `accepted` answer."""
        return self._accepted(self.call(calls.submit_chat(messages, **params)), params)

    def chat(self, messages, *, raise_on_error=True, **params):
        """Submits a conversation and returns a Stream of the reply's events; the server renders the
        model's chat template and stops at its end-of-turn tokens. stream(...).result().text is
        the reply."""
        if params.get("stream") is False:
            raise TypeError("chat() streams; use submit_chat(stream=False) for fire-and-forget")
        return Stream(self, self.submit_chat(messages, **params), raise_on_error=raise_on_error)

    def events(self, accepted, raise_on_error=True):
        """A Stream over a request submitted earlier with submit() on this client."""
        return Stream(self, accepted, raise_on_error=raise_on_error)

    def cancel(self, request_id):
        return self.call(calls.cancel(request_id))

    def status(self, request_id):
        return self.call(calls.status(request_id))

    def stats(self, format="map"):  # noqa: A002 - the wire field is called format
        return self.call(calls.stats(format))

    def tokenize(self, text, add_bos=None, parse_special=False, model=None):
        return self.call(calls.tokenize(text, add_bos, parse_special, model))

    def detokenize(self, ids, model=None):
        return self.call(calls.detokenize(ids, model))

    def embed(self, texts, normalize=True, pooling=None, add_bos=None, model=None, keep_alive=None):
        """One embedding (list of floats) per text, in order. pooling: None (the model's), "mean",
        "cls" or "last"; normalize=False returns the raw pooled vectors."""
        return self.call(calls.embed(texts, normalize, pooling, add_bos, model, keep_alive))

    def model(self, model=None):
        """The model map of the named model (None: the default one)."""
        return self.call(calls.model(model))

    def models(self):
        """Every servable model: {"models": [{name, path, loaded, loading, pinned, default, ...}],
        "max_loaded": N}."""
        return self.call(calls.models())

    def load(self, model, keep_alive=None):
        """Loads `model` (keeping it keep_alive seconds once idle; negative: until evicted) and
        returns {model, load_ms} once it is loaded; ModelLoadFailedError when it cannot be."""
        return self.call(calls.load(model, keep_alive))

    def unload(self, model):
        """Asks the server to unload `model` once its running requests finish; returns
        {model, was_loaded} at once."""
        return self.call(calls.unload(model))

    def replay(self, request_id, from_seq=0):
        """One `replay` answer (may be truncated: see replay_events)."""
        return self.call(calls.replay(request_id, from_seq))

    def replay_events(self, request_id, from_seq=0):
        """Every event with seq >= from_seq published so far, following truncated answers."""
        return self.call(calls.replay_events(request_id, from_seq))
