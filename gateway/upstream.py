"""Calls to providers: one keep-alive connection pool per event loop, and the one small
interface the relay speaks (`send`, `Response`, `UpstreamError`) whichever client is under it.

Momor's own HTTP/1.1 client is the default (`MOMOR_UPSTREAM_TRANSPORT=http1`,
`gateway.upstream_http1`): it runs a fraction of aiohttp's instructions per call, and aiohttp
a fraction of httpx's (httpcore scans every pooled connection on each request).
`MOMOR_UPSTREAM_TRANSPORT=aiohttp` and `=httpx` (`gateway.upstream_httpx`) use those clients.
Timeouts surface as `TimeoutError`, every other failure of the exchange as `UpstreamError`."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Protocol

import aiohttp
from django.conf import settings

from gateway.ops.tracing import TRACEPARENT

POOL_SIZE = 1000
KEEPALIVE_SECONDS = 60


class UpstreamError(Exception):
    """The exchange with the provider broke; `connect` when it could not be reached at all."""

    def __init__(self, message: str, *, connect: bool = False) -> None:
        super().__init__(message)
        self.connect = connect


class Response(Protocol):
    status_code: int

    async def read(self, timeout: float) -> bytes:
        """The whole body, within `timeout` seconds (else TimeoutError)."""

    def chunks(self, timeout: float) -> AsyncIterator[bytes]:
        """The body as it comes, each piece within `timeout` seconds of the one before."""

    async def close(self) -> None: ...


class Client(Protocol):
    async def send(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> Response:
        """POST `body`; the response once its head has come, within `timeout` seconds."""

    async def close(self) -> None: ...


_clients: dict[tuple[asyncio.AbstractEventLoop, str], Client] = {}
# Per pool, a task that closes it when its loop shuts down: a server that ends its loop without
# the lifespan's shutdown (uvicorn's forced exit on a second signal, `--lifespan off`, a server
# that speaks no lifespan) cancels every task left, and the pool is closed there, not left for
# the garbage collector to report as an "Unclosed client session".
_closers: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Task[None]] = {}
_closed_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


async def send(url: str, headers: dict[str, str], body: bytes, timeout: float) -> Response:
    """POST `body`; returns once the response's head has arrived (its body still to read),
    within `timeout` seconds. A call that belongs to a trace sends its `traceparent` along."""
    traceparent = TRACEPARENT.get()
    if traceparent:
        headers = {**headers, "traceparent": traceparent}
    key = (asyncio.get_running_loop(), settings.MOMOR_UPSTREAM_TRANSPORT)
    client = _clients.get(key) or _open(key)
    return await client.send(url, headers, body, timeout)


def _open(key: tuple[asyncio.AbstractEventLoop, str]) -> Client:
    loop, transport = key
    if loop in _closed_loops:
        raise UpstreamError("Momor is shutting down: no new provider connections", connect=True)
    client = _clients[key] = _CLIENTS[transport]()
    _closers[key] = loop.create_task(_close_with_loop(client))
    return client


def _http1_client() -> Client:
    from gateway.upstream_http1 import Http1Client

    return Http1Client(settings.MOMOR_UPSTREAM_CONNECT_TIMEOUT)


def _httpx_client() -> Client:
    # Imported on first use: a gateway on another client never holds httpx in memory.
    from gateway.upstream_httpx import HttpxClient

    return HttpxClient()


async def _close_with_loop(client: Client) -> None:
    try:
        await asyncio.Event().wait()  # until cancelled: by close(), or by the loop's shutdown
    finally:
        await client.close()


async def close() -> None:
    """Close this event loop's pools (at server shutdown); the loop opens none after."""
    loop = asyncio.get_running_loop()
    _closed_loops.add(loop)
    for key in [key for key in _clients if key[0] is loop]:
        del _clients[key]
        closer = _closers.pop(key)
        closer.cancel()
        await asyncio.wait({closer})


_CLIENTS: dict[str, Callable[[], Client]] = {
    "http1": _http1_client,
    "aiohttp": lambda: AiohttpClient(),
    "httpx": _httpx_client,
}


def read_timeout() -> float:
    return float(
        max(settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT, settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT)
    )


class AiohttpClient:
    def __init__(self) -> None:
        connect = settings.MOMOR_UPSTREAM_CONNECT_TIMEOUT
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=POOL_SIZE, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS
            ),
            timeout=aiohttp.ClientTimeout(
                total=None, connect=connect, sock_connect=connect, sock_read=read_timeout()
            ),
            trust_env=False,
        )

    async def send(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> Response:
        try:
            async with asyncio.timeout(timeout):
                raw = await self.session.post(
                    url, data=body, headers=headers, allow_redirects=False
                )
        except aiohttp.ClientError as exc:
            raise _aiohttp_failure(exc) from None
        return AiohttpResponse(raw)

    async def close(self) -> None:
        await self.session.close()


class AiohttpResponse:
    __slots__ = ("raw", "status_code")

    def __init__(self, raw: aiohttp.ClientResponse) -> None:
        self.raw = raw
        self.status_code = raw.status

    async def read(self, timeout: float) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.raw.read()
        except aiohttp.ClientError as exc:
            raise _aiohttp_failure(exc) from None

    def chunks(self, timeout: float) -> AsyncIterator[bytes]:
        return each_within(self._chunks(), timeout)

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self.raw.content.iter_any():
                yield data
        except aiohttp.ClientError as exc:
            # aiohttp raises a body's break ahead of the bytes it received before it: those
            # are the provider's answer all the same
            if received := self.raw.content._read_nowait(-1):
                yield received
            raise _aiohttp_failure(exc) from None

    async def close(self) -> None:
        self.raw.release()


async def each_within(pieces: AsyncIterator[bytes], timeout: float) -> AsyncIterator[bytes]:
    """`pieces`, each within `timeout` seconds of the one before."""
    while True:
        try:
            async with asyncio.timeout(timeout):
                data = await anext(pieces)
        except StopAsyncIteration:
            return
        yield data


def _aiohttp_failure(exc: aiohttp.ClientError) -> Exception:
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return TimeoutError(str(exc))
    connect = isinstance(exc, aiohttp.ClientConnectorError | aiohttp.InvalidURL)
    return UpstreamError(f"{type(exc).__name__}: {exc}", connect=connect)
