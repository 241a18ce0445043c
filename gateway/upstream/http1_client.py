"""Momor's own HTTP/1.1 client for calls to providers (`MOMOR_UPSTREAM_TRANSPORT=http1`, the
default): keep-alive connections per origin, each an asyncio protocol whose responses
httptools (llhttp, in C; uvicorn's parser) reads.

A provider call is one POST with a body Momor wrote and an answer read whole or as it streams:
no redirects, cookies, proxies or retries of a request that reached the server. For that,
aiohttp's client ran about 360,000 instructions a call (measured under callgrind beside a
bare uvicorn app), more than the ASGI server and as much as Momor's own routing and billing
put together; this one a small fraction of that (bench/README.md, "Upstream client").

Time limits are the caller's (`gateway.relay.failover`, `gateway.relay.streaming`): `send` returns
once the response's head has arrived, and each read waits as long as its caller lets it. Nothing is
sent twice: a provider that closed a kept-alive connection as the request went out may have
read it, so that try fails and the call moves on, as any other broken exchange."""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import NamedTuple, cast
from urllib.parse import urlsplit

import httptools

from gateway.upstream.interface import KEEPALIVE_SECONDS, POOL_SIZE, UpstreamError

# Reading from a provider pauses while this much of its answer waits for the client.
HIGH_WATER = 256 * 1024
USER_AGENT = b"Momor"
# The response headers this client reads: how the body is delimited, and how it is encoded.
READ_HEADERS = frozenset({b"content-length", b"transfer-encoding", b"content-encoding"})


class Origin(NamedTuple):
    """Where connections go (a tuple: it keys the pools on every call)."""

    tls: bool
    host: str
    port: int

    @property
    def host_header(self) -> bytes:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        return (host if self.port == default else f"{host}:{self.port}").encode("idna")


@lru_cache(maxsize=1024)
def _target(url: str) -> tuple[Origin, bytes]:
    """Where a provider URL points, and the request's first two lines."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(f"Invalid URL: {url!r} is not an http(s) URL", connect=True)
    tls = parts.scheme == "https"
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError:
        raise UpstreamError(f"Invalid URL: {url!r} has no valid port", connect=True) from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    origin = Origin(tls, parts.hostname, port)
    return origin, b"POST " + path.encode() + b" HTTP/1.1\r\nhost: " + origin.host_header + b"\r\n"


def _head(start: bytes, headers: dict[str, str], length: int) -> bytes:
    lines = [start]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise UpstreamError(f"a header for the provider is malformed ({name!r})", connect=True)
        lines += [name.encode(), b": ", value.encode(), b"\r\n"]
    lines += [b"user-agent: ", USER_AGENT, b"\r\ncontent-length: ", str(length).encode()]
    lines.append(b"\r\n\r\n")
    return b"".join(lines)


class Http1Client:
    def __init__(self, connect_timeout: float, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: how https providers are verified (default: the system's CAs, host names
        checked)."""
        self.connect_timeout = connect_timeout
        self._idle: dict[Origin, deque[Connection]] = {}
        self._tls = tls
        self._closed = False

    async def send(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> Http1Response:
        origin, start = _target(url)
        head = _head(start, headers, len(body))
        connection = self._pooled(origin) or await self._connect(origin)
        return await connection.exchange(head, body, timeout)

    def _pooled(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        expired = time.monotonic() - KEEPALIVE_SECONDS
        while idle and idle[0].idle_since < expired:
            idle.popleft().close()
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
        return None

    def release(self, connection: Connection) -> None:
        idle = self._idle.setdefault(connection.origin, deque())
        if self._closed or len(idle) >= POOL_SIZE:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def _connect(self, origin: Origin) -> Connection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context() if origin.tls else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: Connection(self, origin), origin.host, origin.port, ssl=tls
                )
        except TimeoutError:
            raise TimeoutError(f"Connection timeout to {origin.host}:{origin.port}") from None
        except (OSError, ssl.SSLError) as exc:
            message = f"ClientConnectorError: cannot connect to {origin.host}:{origin.port} ({exc})"
            raise UpstreamError(message, connect=True) from None
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def close(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                idle.pop().close()


class Connection(asyncio.Protocol):
    """One connection to a provider; one exchange at a time."""

    def __init__(self, client: Http1Client, origin: Origin) -> None:
        self.client, self.origin = client, origin
        self.transport: asyncio.Transport | None = None
        self.response: Http1Response | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.lost = False
        self.idle_since = 0.0
        self.paused = False

    @property
    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    async def exchange(self, head: bytes, body: bytes, timeout: float) -> Http1Response:
        response = self.response = Http1Response(self)
        transport = cast(asyncio.Transport, self.transport)
        transport.write(head + body if len(body) < 65_536 else head)
        if len(body) >= 65_536:
            transport.write(body)
        await response.within(response.head, timeout)
        return response

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes on an idle connection: it cannot be trusted again
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            response.fail(UpstreamError(f"ClientPayloadError: malformed response ({exc})"))
            self.close()
            return
        response.arrived()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        response = self.response
        if response is not None and not response.complete:
            response.lost()

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered in READ_HEADERS:
            cast(Http1Response, self.response).header(lowered, value)

    def on_headers_complete(self) -> None:
        response = cast(Http1Response, self.response)
        response.status_code = self.parser.get_status_code()
        response.keep_alive = self.parser.should_keep_alive()
        if not response.head.done():
            response.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        response = cast(Http1Response, self.response)
        if response.decoder is None:
            response.pending.append(body)
            response.waiting_bytes += len(body)
        else:
            response.decoded(body)

    def on_message_complete(self) -> None:
        cast(Http1Response, self.response).finish()

    # flow control and life

    def pause(self) -> None:
        if not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.paused and self.transport is not None and not self.lost:
            self.paused = False
            self.transport.resume_reading()

    def done_with(self, response: Http1Response) -> None:
        """The response is closed: the connection goes back to the pool if it can."""
        self.response = None
        if response.complete and response.keep_alive and self.usable and not self.paused:
            self.client.release(self)
        else:
            self.close()

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()


class Http1Response:
    """What `gateway.upstream.interface.Response` promises: the status, the body whole or as it
    comes."""

    __slots__ = (
        "complete",
        "connection",
        "decoder",
        "failure",
        "head",
        "keep_alive",
        "pending",
        "sized",
        "status_code",
        "waiter",
        "waiting_bytes",
    )

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.head: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.status_code = 0
        self.pending: deque[bytes] = deque()
        self.waiting_bytes = 0
        self.waiter: asyncio.Future[None] | None = None
        self.complete = self.keep_alive = self.sized = False
        self.failure: BaseException | None = None
        self.decoder: zlib._Decompress | None = None

    # fed by the connection

    def header(self, name: bytes, value: bytes) -> None:
        if name in (b"content-length", b"transfer-encoding"):
            self.sized = True
        elif name == b"content-encoding" and value.strip().lower() in (b"gzip", b"deflate"):
            self.decoder = zlib.decompressobj(47)  # gzip or zlib, by the header it finds

    def decoded(self, data: bytes) -> None:
        """A compressed piece of the body, decompressed."""
        try:
            data = cast("zlib._Decompress", self.decoder).decompress(data)
        except zlib.error:
            self.fail(UpstreamError("ClientPayloadError: the answer does not decompress"))
            self.connection.close()
            return
        if data:
            self.pending.append(data)
            self.waiting_bytes += len(data)

    def arrived(self) -> None:
        """What one read brought is in: its reader is woken once (reading pauses past the
        high-water mark until it catches up)."""
        if self.waiting_bytes > HIGH_WATER:
            self.connection.pause()
        if self.pending:
            self._wake()

    def finish(self) -> None:
        self.complete = True
        self._wake()

    def lost(self) -> None:
        if self.head.done() and not self.sized and self.failure is None:
            self.finish()  # an answer without a length ends where the connection does
            return
        self.fail(UpstreamError("ServerDisconnectedError: the provider closed the connection"))

    def fail(self, failure: BaseException) -> None:
        self.failure = failure
        if not self.head.done():
            self.head.set_exception(failure)
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _expire(self, waited: asyncio.Future[None]) -> None:
        """A wait ran out: the exchange fails, and its connection cannot be used again."""
        if not waited.done():
            self.fail(TimeoutError("The provider did not answer in time."))
            self.connection.close()

    async def within(self, waited: asyncio.Future[None], timeout: float) -> None:
        """Await `waited` at most `timeout` seconds (a timer only while it is not done)."""
        if waited.done():
            waited.result()
            return
        timer = asyncio.get_running_loop().call_later(timeout, self._expire, waited)
        try:
            await waited
        finally:
            timer.cancel()

    # read by the relay

    async def read(self, timeout: float) -> bytes:
        """The whole body, within `timeout` of the call."""
        if self.complete and self.failure is None:
            parts = list(self.pending)
        else:
            parts = []
            deadline = asyncio.get_running_loop().time() + timeout
            async for data in self.chunks(timeout, deadline):
                parts.append(data)
        self.pending.clear()
        return b"".join(parts)

    async def chunks(self, timeout: float, deadline: float | None = None) -> AsyncIterator[bytes]:
        """The body as it comes, each piece within `timeout` of the one before (and all of
        it by `deadline`, a loop time, where given)."""
        loop = asyncio.get_running_loop()
        while True:
            if self.pending:
                data = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
                self.pending.clear()
                self.waiting_bytes = 0
                self.connection.resume()
                yield data
                continue
            if self.failure is not None:
                raise self.failure
            if self.complete:
                return
            wait = timeout if deadline is None else min(timeout, deadline - loop.time())
            self.waiter = loop.create_future()
            try:
                await self.within(self.waiter, max(wait, 0.0))
            finally:
                self.waiter = None

    async def close(self) -> None:
        if self.connection.response is self:
            self.connection.done_with(self)
