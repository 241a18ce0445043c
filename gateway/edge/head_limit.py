"""The ASGI guard in front of everything else, HTTP and websockets: a request's target (its
path and query) and its headers are bounded before any routing, Django, or work on them.

uvicorn (httptools) hands the application a request line and headers of any size; Daphne
(Twisted) answers `400 Bad Request` itself to a request line and headers past 16 KiB together,
or past 500 headers, before Momor sees them. Momor holds the same 16 KiB under either:

- a target (path and query) past `TARGET_LIMIT` is refused with 414;
- headers past `HEADERS_LIMIT` (names and values together) or more than `HEADER_COUNT_LIMIT`
  of them are refused with 431;

each as OpenAI's error object (on a calls' route, in its entry's shape) with
X-Momor-Request-Id, and the connection closed. A websocket handshake past them is closed
before it is accepted (the server answers 403)."""

from __future__ import annotations

from core.asgi_types import ASGIApp, Receive, Scope, Send
from gateway.edge.body_limit import KIB, entry_of, refuse
from gateway.request.errors import GatewayError

TARGET_LIMIT = 16 * KIB
HEADERS_LIMIT = 16 * KIB
HEADER_COUNT_LIMIT = 100


class HeadLimit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            error = refusal(scope)
            if error is not None:
                if scope["type"] == "http":
                    await refuse(send, error, entry_of(scope))
                else:
                    await send({"type": "websocket.close"})
                return
        await self.app(scope, receive, send)


def refusal(scope: Scope) -> GatewayError | None:
    """414 or 431 for a request past the bounds; None for one within them."""
    path = scope.get("raw_path") or scope["path"].encode()
    if len(path) + len(scope.get("query_string", b"")) > TARGET_LIMIT:
        return GatewayError(
            414,
            f"The URL (path and query) is longer than {TARGET_LIMIT // KIB} KiB.",
            code="uri_too_long",
        )
    headers = scope.get("headers", ())
    if len(headers) > HEADER_COUNT_LIMIT:
        return _headers_too_large(f"The request has more than {HEADER_COUNT_LIMIT} headers.")
    if sum(len(name) + len(value) for name, value in headers) > HEADERS_LIMIT:
        return _headers_too_large(
            f"The request's headers are larger than {HEADERS_LIMIT // KIB} KiB."
        )
    return None


def _headers_too_large(message: str) -> GatewayError:
    return GatewayError(431, message, code="request_header_fields_too_large")
