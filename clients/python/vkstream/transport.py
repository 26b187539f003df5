"""Blocking transports: the Unix socket (length-prefixed frames) and ZeroMQ DEALER."""
import os
import socket
import time

from . import errors
from .protocol import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encode_frame


def runtime_dir():
    """$XDG_RUNTIME_DIR/vkstream when set, else /run/vkstream (the system instance)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(xdg, "vkstream") if xdg else "/run/vkstream"


def not_running_hint(path):
    """How to start the daemon serving `path`: the system instance owns /run/vkstream, users their own."""
    scope = "sudo systemctl start vkstream.socket" if path.startswith("/run/vkstream/") else \
        "systemctl --user start vkstream.socket"
    return "start it with `vkstreamd --model FILE.gguf` or `%s`" % scope


def check_unix_listener(path, what, timeout=2.0):
    """Raises errors.NotRunningError unless something accepts connections on the Unix socket `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(timeout)
    try:
        probe.connect(path)
    except OSError as exc:
        raise errors.NotRunningError("vkstreamd is not running at %s (%s): %s"
                                     % (what, exc.strerror or exc, not_running_hint(path))) from None
    finally:
        probe.close()


def default_socket_path():
    return os.path.join(runtime_dir(), "vkstream.sock")


def default_router_endpoint():
    return "ipc://" + os.path.join(runtime_dir(), "router.zmq")


def default_pub_endpoint():
    return "ipc://" + os.path.join(runtime_dir(), "pub.zmq")


class UnixTransport:
    """One connection to the daemon's Unix socket."""

    def __init__(self, path=None, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, connect_timeout=5.0):
        self.path = path or default_socket_path()
        self.max_frame_bytes = max_frame_bytes
        self._decoder = FrameDecoder(max_frame_bytes)
        self._ready = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(connect_timeout)
        try:
            self._sock.connect(self.path)
        except OSError as exc:
            self._sock.close()
            if isinstance(exc, (FileNotFoundError, ConnectionRefusedError)):
                raise errors.NotRunningError("vkstreamd is not running at %s (%s): %s"
                                             % (self.path, exc.strerror or exc, not_running_hint(self.path))) from None
            raise errors.ConnectionClosedError(
                "cannot connect to %s: %s (is vkstreamd running? %s)"
                % (self.path, exc.strerror or exc, not_running_hint(self.path))) from None
        self._closed = False

    def send(self, payload):
        if self._closed:
            raise errors.ConnectionClosedError("connection is closed")
        try:
            self._sock.settimeout(None)
            self._sock.sendall(encode_frame(payload, self.max_frame_bytes))
        except OSError as exc:
            self._closed = True
            raise errors.ConnectionClosedError("send failed: %s" % exc) from None

    def recv(self, timeout):
        """Next payload; errors.ClientTimeoutError after `timeout` seconds (None = forever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready:
            if self._closed:
                raise errors.ConnectionClosedError("server closed the connection")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                raise errors.ClientTimeoutError("no message from the server within %.3g s" % timeout)
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                raise errors.ClientTimeoutError("no message from the server within %.3g s" % timeout) from None
            except OSError as exc:
                self._closed = True
                raise errors.ConnectionClosedError("receive failed: %s" % exc) from None
            if not data:
                self._closed = True
                raise errors.ConnectionClosedError("server closed the connection")
            self._ready.extend(self._decoder.feed(data))
        return self._ready.pop(0)

    def close(self):
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass


class ZmqTransport:
    """A DEALER socket connected to the daemon's ROUTER endpoint."""

    def __init__(self, endpoint=None, context=None, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        import zmq  # imported lazily: the Unix-socket client does not need pyzmq

        self._zmq = zmq
        self.endpoint = endpoint or default_router_endpoint()
        if self.endpoint.startswith("ipc://"):
            # ZeroMQ would wait forever for an ipc peer that is not there: fail at once instead.
            check_unix_listener(self.endpoint[len("ipc://"):], self.endpoint)
        self.max_frame_bytes = max_frame_bytes
        self._own_context = context is None
        self._ctx = context or zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(self.endpoint)

    def send(self, payload):
        if len(payload) > self.max_frame_bytes:
            raise errors.FrameTooLargeError("message of %d bytes exceeds max_frame_bytes" % len(payload))
        self._sock.send(payload)

    def recv(self, timeout):
        ms = None if timeout is None else max(0, int(timeout * 1000))
        if not self._sock.poll(ms, self._zmq.POLLIN):
            raise errors.ClientTimeoutError("no message from the server within %.3g s" % timeout)
        frames = self._sock.recv_multipart()
        return frames[-1]

    def close(self):
        self._sock.close(0)
        if self._own_context:
            self._ctx.term()
