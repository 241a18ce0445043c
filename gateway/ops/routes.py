"""The operations routes, answered in front of everything else (no authentication, rate limit
or record): GET /healthz, GET /readyz and, unless served on a port of its own, GET /metrics
(with its token, or when opened on purpose)."""

from __future__ import annotations

import asyncio

import orjson
from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST

from core.asgi_types import ASGIApp, Receive, Scope, Send
from gateway.ops import exposition, probes

PROBES = ("/healthz", "/readyz")
JSON = b"application/json"


class OperationsRoutes:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if path in PROBES or (path == "/metrics" and _metrics_here()):
            await _serve(path, scope, send)
            return
        await self.app(scope, receive, send)


def _metrics_here() -> bool:
    """Tenants' figures are never on Momor's port by default: a scrape needs the token, unless
    the operator opened the route on purpose (MOMOR_METRICS_PUBLIC, a port that is private)."""
    if not settings.MOMOR_METRICS or settings.MOMOR_METRICS_PORT:
        return False
    return bool(settings.MOMOR_METRICS_TOKEN) or bool(settings.MOMOR_METRICS_PUBLIC)


async def _serve(path: str, scope: Scope, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await _send(send, 405, JSON, b'{"error": "Use GET."}', [(b"allow", b"GET, HEAD")])
    elif path == "/healthz":
        await _send(send, 200, JSON, b'{"status": "ok"}')
    elif path == "/readyz":
        checks = await probes.readiness()
        ready = probes.ready(checks)
        body = orjson.dumps({"status": "ready" if ready else "not ready", "checks": checks})
        await _send(send, 200 if ready else 503, JSON, body)
    elif not exposition.authorized(_header(scope, b"authorization")):
        await _send(send, 401, b"text/plain", b"A valid metrics token is required.\n",
                    [(b"www-authenticate", b'Bearer realm="metrics"')])  # fmt: skip
    else:
        body = await asyncio.to_thread(exposition.exposition)
        await _send(send, 200, CONTENT_TYPE_LATEST.encode(), body)


async def _send(
    send: Send,
    status: int,
    content_type: bytes,
    body: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    headers.extend(extra or [])
    headers.append((b"cache-control", b"no-store"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None
