"""Wire-level helpers: msgpack encoding, Unix-socket framing, topics, message objects.

Everything here follows docs/PROTOCOL.md; nothing depends on the C++ code."""
import json
import re
import struct

import msgpack

from . import errors

PROTOCOL_VERSION = 1
DEFAULT_MAX_FRAME_BYTES = 1 << 20
HEADER = struct.Struct(">I")
TOPIC_RE = re.compile(r"^vks\.[0-9a-f]{32}$")
CLIENT_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

STREAM_EVENT_TYPES = frozenset({"queued", "scheduled", "preempted", "token", "error", "finished", "tool_call"})
FINISH_REASONS = ("stop", "length", "cancelled", "deadline", "error", "tool_calls")

# generate fields accepted by the server (section 3.2); used to catch typos early on the client.
GENERATE_FIELDS = frozenset({
    "prompt", "prompt_ids", "add_bos", "max_tokens", "min_tokens", "temperature", "top_k", "top_p", "min_p",
    "repetition_penalty", "presence_penalty", "frequency_penalty", "penalty_last_n", "logit_bias", "seed",
    "stop", "stop_token_ids", "ignore_eos", "logprobs", "priority", "deadline_ms", "id", "detached", "stream",
    "grammar", "json_schema", "model", "keep_alive", "speculative",
})
FLOAT_FIELDS = frozenset({
    "temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty", "keep_alive",
})


class Message(dict):
    """A decoded server message: a dict with attribute access (``msg.seq``, ``msg.text``).

    Missing keys read as None through attributes."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            return None

    @property
    def is_event(self):
        """Stream event of a request (has id + seq); an ``error`` without seq is a direct answer."""
        return self.get("type") in STREAM_EVENT_TYPES and "seq" in self


def pack(obj):
    """msgpack bytes of a request map (str keys/values as msgpack str, floats as float64)."""
    return msgpack.packb(obj, use_bin_type=True)


def with_model(req, model=None, keep_alive=None):
    """Adds the served model's name and keep_alive (seconds) to a request map when given
    (docs/PROTOCOL.md "Models"): absent means the default model and the server's --keep-alive."""
    if model is not None:
        req["model"] = str(model)
    if keep_alive is not None:
        req["keep_alive"] = float(keep_alive)
    return req


def embed_request(texts, normalize=True, pooling=None, add_bos=None, model=None, keep_alive=None):
    """The `embed` request map (docs/PROTOCOL.md 3.11) for one text or a list of texts."""
    if isinstance(texts, str):
        texts = [texts]
    req = {"type": "embed", "input": list(texts), "normalize": bool(normalize)}
    if pooling is not None:
        req["pooling"] = pooling
    if add_bos is not None:
        req["add_bos"] = bool(add_bos)
    return with_model(req, model, keep_alive)


def unpack(payload):
    """Decodes one server payload into a Message; ProtocolViolationError if it is not a map."""
    try:
        obj = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated exception types
        raise errors.ProtocolViolationError("server sent invalid msgpack: %s" % exc) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise errors.ProtocolViolationError("server message is not a map with a string type")
    return Message(obj)


def encode_frame(payload, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
    """4-byte big-endian length + payload."""
    if len(payload) > max_frame_bytes:
        raise errors.FrameTooLargeError("frame of %d bytes exceeds max_frame_bytes %d" % (len(payload), max_frame_bytes))
    return HEADER.pack(len(payload)) + payload


class FrameDecoder:
    """Incremental decoder of the Unix-socket framing. feed() bytes, then iterate frames().

    The length is checked against max_frame_bytes before any payload is buffered."""

    def __init__(self, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()

    def feed(self, data):
        self._buf += data
        out = []
        while len(self._buf) >= 4:
            (n,) = HEADER.unpack_from(self._buf, 0)
            if n == 0:
                raise errors.ProtocolViolationError("frame of length 0")
            if n > self.max_frame_bytes:
                raise errors.FrameTooLargeError("frame of %d bytes exceeds max_frame_bytes %d" % (n, self.max_frame_bytes))
            if len(self._buf) < 4 + n:
                break
            out.append(bytes(self._buf[4:4 + n]))
            del self._buf[:4 + n]
        return out

    @property
    def buffered(self):
        return len(self._buf)


def is_valid_topic(topic):
    if isinstance(topic, bytes):
        topic = topic.decode("ascii", "replace")
    return bool(TOPIC_RE.match(topic))


def is_valid_client_id(request_id):
    return bool(CLIENT_ID_RE.match(request_id))


def generate_request(prompt=None, *, prompt_ids=None, **params):
    """The generate map. Exactly one of prompt / prompt_ids. Unknown parameter names raise
    TypeError (the server would silently ignore them)."""
    unknown = set(params) - GENERATE_FIELDS
    if unknown:
        raise TypeError("unknown generate parameter(s): %s" % ", ".join(sorted(unknown)))
    if (prompt is None) == (prompt_ids is None):
        raise TypeError("give exactly one of prompt or prompt_ids")
    req = {"type": "generate"}
    if prompt is not None:
        req["prompt"] = prompt
    else:
        req["prompt_ids"] = [int(t) for t in prompt_ids]
    for key, value in params.items():
        if value is None:
            continue
        if key in FLOAT_FIELDS:
            value = float(value)
        elif key == "logit_bias":
            value = {int(k): float(v) for k, v in dict(value).items()}
        elif key == "stop" and isinstance(value, (list, tuple)):
            value = list(value)
        elif key == "json_schema":
            if not isinstance(value, (str, dict, bool)):
                raise TypeError("json_schema must be a dict (the schema), a bool or its JSON text")
            if not isinstance(value, str):
                # As JSON text: a deep schema as a msgpack map would exceed the frame nesting limit.
                value = json.dumps(value)
        req[key] = value
    return req


CHAT_TURN_FIELDS = ("tool_calls", "tool_call_id", "name", "reasoning_content")


def chat_request(messages, *, add_generation_prompt=None, chat_template=None, tools=None, tool_choice=None,
                 tool_name=None, parallel_tool_calls=None, **params):
    """The chat map: `messages` is a list of {"role": ..., "content": ...} dicts (or (role, content)
    pairs; a dict's tool_calls, tool_call_id, name and reasoning_content go along); every generate
    parameter except prompt, prompt_ids and add_bos applies. The server renders the model's chat
    template (or `chat_template`) and stops at the model's end-of-turn tokens. `tools` (OpenAI-shaped
    list, or its JSON text) offers tools: the reply's calls come as `tool_call` events."""
    for key in ("prompt", "prompt_ids", "add_bos"):
        if key in params:
            raise TypeError("chat takes messages, not %s" % key)
    turns = []
    for m in messages:
        role, content = (m["role"], m.get("content")) if isinstance(m, dict) else m
        turn = {"role": str(role), "content": "" if content is None else str(content)}
        if isinstance(m, dict):
            for key in CHAT_TURN_FIELDS:
                value = m.get(key)
                if value is not None:
                    turn[key] = json.dumps(value) if key == "tool_calls" and not isinstance(value, str) else str(value)
        turns.append(turn)
    if not turns:
        raise TypeError("chat needs at least one message")
    req = generate_request("", **params)
    req["type"] = "chat"
    del req["prompt"]
    req["messages"] = turns
    if add_generation_prompt is not None:
        req["add_generation_prompt"] = bool(add_generation_prompt)
    if chat_template is not None:
        req["chat_template"] = str(chat_template)
    if tools is not None:
        # As JSON text: key order is meaning (a schema's properties), and deep schemas would
        # exceed the frame's nesting limit as msgpack maps.
        req["tools"] = tools if isinstance(tools, str) else json.dumps(tools)
    if tool_choice is not None:
        req["tool_choice"] = str(tool_choice)
    if tool_name is not None:
        req["tool_name"] = str(tool_name)
    if parallel_tool_calls is not None:
        req["parallel_tool_calls"] = bool(parallel_tool_calls)
    return req


class SeqTracker:
    """Keeps next_seq for one request: classifies events as new, duplicate or after a gap."""

    NEW, DUPLICATE, GAP = "new", "duplicate", "gap"

    def __init__(self, next_seq=0):
        self.next_seq = next_seq
        self.finished = False

    def classify(self, event):
        seq = event.get("seq")
        if seq is None or seq < self.next_seq:
            return self.DUPLICATE
        if seq > self.next_seq:
            return self.GAP
        return self.NEW

    def accept(self, event):
        self.next_seq = event["seq"] + 1
        if event.get("type") == "finished":
            self.finished = True
