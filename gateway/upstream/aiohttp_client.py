"""aiohttp as the client for calls to providers (`MOMOR_UPSTREAM_TRANSPORT=aiohttp`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from django.conf import settings

from gateway.upstream.interface import (
    KEEPALIVE_SECONDS,
    POOL_SIZE,
    Response,
    UpstreamError,
    each_within,
    read_timeout,
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


def _aiohttp_failure(exc: aiohttp.ClientError) -> Exception:
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return TimeoutError(str(exc))
    connect = isinstance(exc, aiohttp.ClientConnectorError | aiohttp.InvalidURL)
    return UpstreamError(f"{type(exc).__name__}: {exc}", connect=connect)
