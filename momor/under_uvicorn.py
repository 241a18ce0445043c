"""Momor under uvicorn's httptools protocol (docs/operations.md's command): a response's head leaves
in the same write as the first part of its body.

uvicorn writes a response's head when the application sends `http.response.start`, and each part of
its body when that is sent: two writes for an answer whose body is ready with its head, as every
answer the lean route sends whole is. Each write is a system call, and on loopback or a VM it wakes
the client, which then waits for the rest. `install` puts a subclass of uvicorn's
`RequestResponseCycle` in its place that holds the head of an answer of a declared length (every
answer sent whole) until its body's first write: it leaves in one write. A stream's head, of a body
of unknown length, is written at once, as uvicorn writes it.

And every connection sends with Nagle's algorithm off (TCP_NODELAY), however uvicorn got its
socket: given one by `--fd` (socket activation, a process manager), uvicorn takes it for a Unix
socket and leaves Nagle on, so a write that follows an unacknowledged one (a body after its head,
a stream's next chunk) waits for the client's delayed acknowledgement, up to 40 ms. Nothing else
uvicorn does changes.

`momor.asgi` calls `install` when uvicorn is the server (it loads the application before its
protocol); under `--http h11` the class is left unused."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from uvicorn.protocols.http import httptools_impl


class HeadWithBody:
    """The transport as one response's cycle writes to it: the write made while `holding` is
    kept, and sent with the next write, by `flush`, or before a close."""

    __slots__ = ("held", "holding", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.held = b""
        self.holding = False

    def write(self, data: bytes) -> None:
        if self.holding:
            self.holding = False
            self.held = data
            return
        if self.held:
            data, self.held = self.held + data, b""
        self.transport.write(data)

    def flush(self) -> None:
        if self.held and not self.transport.is_closing():
            self.transport.write(self.held)
        self.held = b""

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


class OneWriteCycle(httptools_impl.RequestResponseCycle):
    """uvicorn's request-response cycle, writing through a `HeadWithBody`."""

    transport: HeadWithBody  # type: ignore[assignment]  # the transport's writes, duck-typed

    def __init__(self, scope: Any, transport: asyncio.Transport, *args: Any, **kwargs: Any) -> None:
        super().__init__(scope, HeadWithBody(transport), *args, **kwargs)  # type: ignore[arg-type]  # as above

    async def send(self, message: Any) -> None:
        if self.response_started or message["type"] != "http.response.start":
            await super().send(message)
            return
        self.transport.holding = True
        await super().send(message)
        if self.chunked_encoding is not False:  # no declared length (uvicorn read the headers)
            self.transport.flush()


def install() -> None:
    httptools_impl.RequestResponseCycle = OneWriteCycle  # type: ignore[misc]  # looked up per request
    connection_made = httptools_impl.HttpToolsProtocol.connection_made

    def made_without_delay(protocol: Any, transport: asyncio.Transport) -> None:
        connection_made(protocol, transport)
        no_delay(transport)

    httptools_impl.HttpToolsProtocol.connection_made = made_without_delay  # type: ignore[method-assign,assignment]  # wrapped, the same signature


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Nagle's algorithm off on the transport's TCP socket (a Unix socket has none)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        return
