"""The one small interface the relay speaks to providers whichever client is under it
(`gateway.upstream.pool` picks it): a `Response`, `UpstreamError`, the pool's sizes and
timeouts, and the call's `traceparent` passed on to the providers it tries (set by
`gateway.ops.tracing`). Timeouts surface as `TimeoutError`, every other failure of the
exchange as `UpstreamError`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Protocol

from django.conf import settings

TRACEPARENT: ContextVar[str] = ContextVar("momor_traceparent", default="")

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


def read_timeout() -> float:
    return float(
        max(settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT, settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT)
    )


async def each_within(pieces: AsyncIterator[bytes], timeout: float) -> AsyncIterator[bytes]:
    """`pieces`, each within `timeout` seconds of the one before."""
    while True:
        try:
            async with asyncio.timeout(timeout):
                data = await anext(pieces)
        except StopAsyncIteration:
            return
        yield data
