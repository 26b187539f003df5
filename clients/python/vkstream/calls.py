"""Every request of the protocol written once, for the sync and the asyncio client alike.

Each call is a generator: it yields a request map, receives the server's answer (the client sends
it in, raising the typed error of an `error` answer first), and returns the result. A call that
needs several round trips (replay paging) yields several requests. Client.call() drives one with
blocking I/O, AsyncClient.call() with awaits, so neither repeats a request's fields or its
answer's shape."""
from .protocol import PROTOCOL_VERSION, Message, chat_request, embed_request, generate_request, with_model


def hello(version=PROTOCOL_VERSION, client="vkstream-python"):
    return (yield {"type": "hello", "version": version, "client": client})


def submit(prompt=None, **params):
    """A generate; returns the `accepted` answer."""
    return (yield generate_request(prompt, **params))


def submit_chat(messages, **params):
    """A chat (the server renders the model's template); returns the `accepted` answer."""
    return (yield chat_request(messages, **params))


def cancel(request_id):
    return (yield {"type": "cancel", "id": request_id})


def status(request_id):
    return (yield {"type": "status", "id": request_id})


def stats(format="map"):  # noqa: A002 - the wire field is called format
    answer = yield {"type": "stats", "format": format}
    return answer["text"] if format == "prometheus" else answer["stats"]


def tokenize(text, add_bos=None, parse_special=False, model=None):
    """add_bos None: the model's tokenizer.ggml.add_bos_token decides (Llama: yes, Qwen: no)."""
    request = {"type": "tokenize", "text": text, "parse_special": parse_special}
    if add_bos is not None:
        request["add_bos"] = add_bos
    answer = yield with_model(request, model)
    return answer["ids"]


def detokenize(ids, model=None):
    return (yield with_model({"type": "detokenize", "ids": [int(i) for i in ids]}, model))["text"]


def embed(texts, normalize=True, pooling=None, add_bos=None, model=None, keep_alive=None):
    """One embedding (list of floats) per text, in order (docs/PROTOCOL.md 3.11)."""
    return (yield embed_request(texts, normalize, pooling, add_bos, model, keep_alive))["embeddings"]


def model(model=None):  # noqa: F811 - the parameter is the wire field's name
    """The model map of the named model (None: the default one)."""
    return (yield with_model({"type": "model"}, model))["model"]


def models():
    """The `models` answer: {"models": [{name, path, loaded, ...}], "max_loaded": N}."""
    return (yield {"type": "models"})


def load(model, keep_alive=None):
    """Loads `model` now; the `loaded` answer ({model, load_ms}) comes once it is loaded."""
    if not model:
        raise TypeError("load needs a model name")
    return (yield with_model({"type": "load"}, model, keep_alive))


def unload(model):
    """Unloads `model` once its running requests finish; the `unloaded` answer ({model, was_loaded})
    comes at once."""
    if not model:
        raise TypeError("unload needs a model name")
    return (yield with_model({"type": "unload"}, model))


def replay(request_id, from_seq=0):
    """One `replay` answer (may be truncated: see replay_events)."""
    return (yield {"type": "replay", "id": request_id, "from_seq": from_seq})


def replay_events(request_id, from_seq=0):
    """Every event with seq >= from_seq published so far, following truncated answers."""
    events = []
    while True:
        answer = yield {"type": "replay", "id": request_id, "from_seq": from_seq}
        events.extend(Message(e) for e in answer["events"])
        if not answer.get("truncated") or answer["next_seq"] <= from_seq:
            return events
        from_seq = answer["next_seq"]


def drive(call, answer_of):
    """Runs a call with a blocking answer_of(request) -> answer."""
    try:
        request = next(call)
        while True:
            request = call.send(answer_of(request))
    except StopIteration as done:
        return done.value


async def drive_async(call, answer_of):
    """Runs a call with an awaitable answer_of(request) -> answer."""
    try:
        request = next(call)
        while True:
            request = call.send(await answer_of(request))
    except StopIteration as done:
        return done.value
