"""The ASGI guard in front of every HTTP route: each request body has a limit suited to its
route, applied while it is read, and a time to arrive in.

- A declared Content-Length past the limit is refused with 413 before any of the body is read:
  the server sends `100 Continue` only when the application first reads, so a client that
  waits for it gets the 413 instead.
- A body that grows past the limit as it arrives (chunked, or longer than declared) is refused
  with 413 as soon as it does, without reading the rest; the connection is then closed.
- A body still arriving after `timeout` seconds (a chunked body that never ends, a client that
  trickles) is refused with 408.

The calls' routes (`gateway.edge.entries`) keep the spec's 30 MiB and its order (415 for a
body that is not JSON before 413). This holds under servers that hand the body to the
application as it arrives (uvicorn); Daphne reads a whole body before the application sees
any of it (see docs/security.md, "Input bounds")."""

from __future__ import annotations

import asyncio
import uuid

from core.asgi_types import ASGIApp, Message, Receive, Scope, Send
from gateway.edge.entries import CHAT, SHAPE_BY_PATH, Entry
from gateway.request.errors import GatewayError, request_too_large, unsupported_media_type

GUARDED = frozenset(SHAPE_BY_PATH)
"""The calls' routes: every entry's paths (and Messages' token count)."""
KIB = 1024
# First match wins; every other route (the members' UI, the record lookups) gets DEFAULT_LIMIT.
ROUTE_LIMITS: tuple[tuple[str, int], ...] = (
    ("/accounts/", 16 * KIB),  # sign-in, password change and reset
    ("/admin/login/", 16 * KIB),
    ("/api/manage/", 64 * KIB),  # the management API's JSON
    ("/admin/", 1024 * KIB),  # admin forms, a change list edited in place
)
DEFAULT_LIMIT = 64 * KIB


class _Refused(Exception):
    def __init__(self, error: GatewayError) -> None:
        super().__init__(error.message)
        self.error = error


class BodyLimit:
    def __init__(self, app: ASGIApp, completions_limit: int, timeout: float) -> None:
        self.app, self.completions_limit, self.timeout = app, completions_limit, timeout

    def limit_for(self, path: str) -> int:
        if path in GUARDED:
            return self.completions_limit
        found = (limit for prefix, limit in ROUTE_LIMITS if path.startswith(prefix))
        return next(found, DEFAULT_LIMIT)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        if _declared_length(scope) > limit:
            await refuse(send, self.too_large(scope, limit), entry_of(scope))
            return
        reader = _Reader(receive, limit, self.timeout)
        answer = _Answer(send)
        try:
            await self.app(scope, reader.receive, answer.send)
        except _Refused as exc:
            if answer.started:
                raise
            refusal = exc.error if exc.error.status != 413 else self.too_large(scope, limit)
            await refuse(send, refusal, entry_of(scope))

    async def whole_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The body of a request the caller serves itself, read whole within the route's
        bounds (the same as for the routes behind the guard); None once refused (the refusal
        is sent here) or when the client went away."""
        limit, entry = self.limit_for(scope["path"]), entry_of(scope)
        if _declared_length(scope) > limit:
            await refuse(send, self.too_large(scope, limit), entry)
            return None
        try:
            async with asyncio.timeout(self.timeout):
                return await _read(receive, limit)
        except TimeoutError:
            await refuse(send, request_timeout(self.timeout), entry)
        except _Refused:
            await refuse(send, self.too_large(scope, limit), entry)
        return None

    def too_large(self, scope: Scope, limit: int) -> GatewayError:
        """413 for a body past `limit`; 415 first on a completions route when it is not JSON."""
        if scope["path"] in GUARDED and not _is_json(scope):
            return unsupported_media_type()
        return request_too_large(limit)


class _Reader:
    """The application's `receive`: counts the body and times its arrival until it is whole;
    after that, messages pass as they come (a disconnect may take any time)."""

    def __init__(self, receive: Receive, limit: int, timeout: float) -> None:
        self.inner, self.limit = receive, limit
        self.deadline = asyncio.get_running_loop().time() + timeout
        self.timeout, self.received, self.whole = timeout, 0, False

    async def receive(self) -> Message:
        if self.whole:
            return await self.inner()
        try:
            async with asyncio.timeout_at(self.deadline):
                message = await self.inner()
        except TimeoutError:
            raise _Refused(request_timeout(self.timeout)) from None
        self.received += len(message.get("body", b""))
        if self.received > self.limit:
            raise _Refused(request_too_large(self.limit))
        self.whole = message["type"] != "http.request" or not message.get("more_body", False)
        return message


async def _read(receive: Receive, limit: int) -> bytes | None:
    parts: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body = message.get("body", b"")
        received += len(body)
        if received > limit:
            raise _Refused(request_too_large(limit))
        parts.append(body)
        if not message.get("more_body", False):
            return b"".join(parts)


class _Answer:
    def __init__(self, send: Send) -> None:
        self.inner, self.started = send, False

    async def send(self, message: Message) -> None:
        self.started = True
        await self.inner(message)


# An application may close with 1000 or 3000-4999 only; like the feed's 4401 and 4403, this
# borrows HTTP's status for the reason (413: too large).
TOO_LARGE_CLOSE = 4413


class WebsocketMessageLimit:
    """Closes a websocket whose client sends a message past `limit` (code 4413); the consumer
    sees it disconnect."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and _message_size(message) > self.limit:
                await send({"type": "websocket.close", "code": TOO_LARGE_CLOSE})
                return {"type": "websocket.disconnect", "code": TOO_LARGE_CLOSE}
            return message

        await self.app(scope, bounded, send)


def _message_size(message: Message) -> int:
    return len(message.get("bytes") or b"") + len((message.get("text") or "").encode())


def request_timeout(seconds: float) -> GatewayError:
    return GatewayError(
        408, f"The body did not arrive within {seconds:g} seconds.", code="request_timeout"
    )


def entry_of(scope: Scope) -> Entry:
    """The entry whose shape a refusal on this path takes: OpenAI's off the calls' routes."""
    return SHAPE_BY_PATH.get(scope.get("path", ""), CHAT)


async def refuse(send: Send, error: GatewayError, entry: Entry = CHAT) -> None:
    """Answer `error` in the entry's shape (OpenAI's error object unless given), with a
    request id, and close the connection."""
    status, body = entry.error(error)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-momor-request-id", uuid.uuid4().hex.encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
    return False


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0
