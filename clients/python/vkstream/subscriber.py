"""Follow a request's events on the daemon's XPUB socket, filling gaps through `replay`."""
import time

from . import errors
from .protocol import Message, SeqTracker, is_valid_topic, unpack
from .transport import default_pub_endpoint


class Subscriber:
    """SUB socket on the XPUB endpoint. `client` (a Client) is used to look up topics (status)
    and to fill gaps (replay); without it, a gap raises ProtocolViolationError.

    Subscribing to a request's topic makes the server re-publish its events from seq 0, so a late
    follower gets the whole stream; duplicates are dropped by seq."""

    def __init__(self, endpoint=None, client=None, context=None, timeout=60.0, poll_replay_s=2.0):
        import zmq

        self._zmq = zmq
        self.endpoint = endpoint or default_pub_endpoint()
        self.client = client
        self.timeout = timeout
        self.poll_replay_s = poll_replay_s
        self._own_context = context is None
        self._ctx = context or zmq.Context()
        self._sock = self._ctx.socket(zmq.SUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(self.endpoint)

    def close(self):
        self._sock.close(0)
        if self._own_context:
            self._ctx.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def follow(self, request_id=None, *, topic=None, from_seq=0):
        """Yields the request's events in seq order from `from_seq`, ending with `finished`.

        Give the request id (the topic is looked up with `status`) or the topic."""
        if topic is None:
            if self.client is None or request_id is None:
                raise TypeError("follow() needs a topic, or a request id and a client")
            topic = self.client.status(request_id)["topic"]
        if not is_valid_topic(topic):
            raise ValueError("not a vkstream topic: %r" % (topic,))
        topic_bytes = topic.encode("ascii")
        tracker = SeqTracker(from_seq)
        self._sock.setsockopt(self._zmq.SUBSCRIBE, topic_bytes)
        try:
            last_progress = time.monotonic()
            while not tracker.finished:
                if self._sock.poll(int(self.poll_replay_s * 1000), self._zmq.POLLIN):
                    frames = self._sock.recv_multipart()
                    if len(frames) != 2 or frames[0] != topic_bytes:
                        continue
                    event = unpack(frames[1])
                    request_id = event.get("id", request_id)
                    kind = tracker.classify(event)
                    if kind == SeqTracker.DUPLICATE:
                        continue
                    if kind == SeqTracker.GAP:
                        for missed in self._fill(request_id, tracker):
                            yield missed
                        if tracker.classify(event) != SeqTracker.NEW:
                            continue
                    tracker.accept(event)
                    last_progress = time.monotonic()
                    yield event
                    continue
                # Quiet: the request may be waiting in the queue, or messages were lost. Ask replay
                # (cheap) when we can, so a lost tail never hangs the follower.
                if self.client is not None and request_id is not None:
                    missed = self._fill(request_id, tracker)
                    if missed:
                        last_progress = time.monotonic()
                    for event in missed:
                        yield event
                if time.monotonic() - last_progress > self.timeout:
                    raise errors.ClientTimeoutError("no event on %s for %.3g s" % (topic, self.timeout))
        finally:
            self._sock.setsockopt(self._zmq.UNSUBSCRIBE, topic_bytes)

    def _fill(self, request_id, tracker):
        if self.client is None or request_id is None:
            raise errors.ProtocolViolationError(
                "gap in the stream at seq %d and no client to replay it" % tracker.next_seq)
        out = []
        for event in self.client.replay_events(request_id, tracker.next_seq):
            event = Message(event)
            if tracker.classify(event) == SeqTracker.NEW:
                tracker.accept(event)
                out.append(event)
        return out
