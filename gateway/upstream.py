"""The shared HTTP client for upstream calls: one keep-alive pool per event loop."""

from __future__ import annotations

import asyncio

import httpx
from django.conf import settings

_clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}


def client() -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        found = _clients[loop] = _new_client()
    return found


def _new_client() -> httpx.AsyncClient:
    chunk = settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT
    connect = settings.MOMOR_UPSTREAM_CONNECT_TIMEOUT
    first_byte = settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT
    return httpx.AsyncClient(
        timeout=httpx.Timeout(
            connect=connect, read=max(chunk, first_byte), write=chunk, pool=connect
        ),
        limits=httpx.Limits(
            max_connections=1000, max_keepalive_connections=200, keepalive_expiry=60
        ),
        follow_redirects=False,
        trust_env=False,
    )
