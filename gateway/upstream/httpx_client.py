"""The httpx side of `gateway.upstream.pool` (`MOMOR_UPSTREAM_TRANSPORT=httpx`), imported when the
first pool opens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
from django.conf import settings

from gateway.upstream.interface import (
    KEEPALIVE_SECONDS,
    POOL_SIZE,
    Response,
    UpstreamError,
    each_within,
    read_timeout,
)


class HttpxClient:
    def __init__(self) -> None:
        connect = settings.MOMOR_UPSTREAM_CONNECT_TIMEOUT
        limits = httpx.Limits(
            max_connections=POOL_SIZE, max_keepalive_connections=200,
            keepalive_expiry=KEEPALIVE_SECONDS,
        )  # fmt: skip
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=connect, read=read_timeout(), write=read_timeout(), pool=connect
            ),
            limits=limits,
            follow_redirects=False,
            trust_env=False,
        )

    async def send(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> Response:
        request = self.client.build_request("POST", url, headers=headers, content=body)
        try:
            async with asyncio.timeout(timeout):
                raw = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _httpx_failure(exc) from None
        return HttpxResponse(raw)

    async def close(self) -> None:
        await self.client.aclose()


class HttpxResponse:
    __slots__ = ("raw", "status_code")

    def __init__(self, raw: httpx.Response) -> None:
        self.raw = raw
        self.status_code = raw.status_code

    async def read(self, timeout: float) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.raw.aread()
        except httpx.HTTPError as exc:
            raise _httpx_failure(exc) from None

    def chunks(self, timeout: float) -> AsyncIterator[bytes]:
        return each_within(self._chunks(), timeout)

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self.raw.aiter_bytes():
                yield data
        except httpx.HTTPError as exc:
            raise _httpx_failure(exc) from None

    async def close(self) -> None:
        await self.raw.aclose()


def _httpx_failure(exc: httpx.HTTPError) -> Exception:
    if isinstance(exc, httpx.TimeoutException):
        return TimeoutError(str(exc))
    connect = isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol)
    return UpstreamError(f"{type(exc).__name__}: {exc}", connect=connect)
