"""Calls to providers: one keep-alive connection pool per event loop, sending through the
one small interface the relay speaks (`send`; `gateway.upstream.interface`: `Response`,
`UpstreamError`) whichever client is under it.

Momor's own HTTP/1.1 client is the default (`MOMOR_UPSTREAM_TRANSPORT=http1`,
`gateway.upstream.http1_client`): it runs a fraction of aiohttp's instructions per call, and aiohttp
a fraction of httpx's (httpcore scans every pooled connection on each request).
`MOMOR_UPSTREAM_TRANSPORT=aiohttp` and `=httpx` (`gateway.upstream.httpx_client`) use those clients.
Timeouts surface as `TimeoutError`, every other failure of the exchange as `UpstreamError`."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

from django.conf import settings

from gateway.upstream.aiohttp_client import AiohttpClient
from gateway.upstream.interface import TRACEPARENT, Client, Response, UpstreamError

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
    from gateway.upstream.http1_client import Http1Client

    return Http1Client(settings.MOMOR_UPSTREAM_CONNECT_TIMEOUT)


def _httpx_client() -> Client:
    # Imported on first use: a gateway on another client never holds httpx in memory.
    from gateway.upstream.httpx_client import HttpxClient

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
