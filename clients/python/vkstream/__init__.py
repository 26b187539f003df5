"""vkstream Python client (docs/PROTOCOL.md, version 1).

Sync:    Client.unix() / Client.zmq(); client.generate("Once upon a time", temperature=0) → Stream of events
Async:   await AsyncClient.unix(); async for ev in await client.generate(...)
Follow:  Subscriber(pub_endpoint, client).follow(request_id)
Errors:  every wire error code has its exception class (vkstream.errors)."""
from . import errors
from .aio import AsyncClient, AsyncStream
from .client import Client, Completion, Stream
from .errors import *  # noqa: F401,F403 - the typed exceptions are part of the package API
from .protocol import PROTOCOL_VERSION, FrameDecoder, Message, encode_frame, generate_request, is_valid_topic
from .subscriber import Subscriber
from .transport import (UnixTransport, ZmqTransport, default_pub_endpoint, default_router_endpoint,
                        default_socket_path)

__version__ = "0.1.0"
