"""The calls' routes (`gateway.edge.entries`) for calls with a key, served as a lean ASGI app in
front of the rest: the same `complete` as the Django view, without Django's request cycle (its
middleware, signals and the thread hops they cost on every call) or the guard's wrappers (the
body is read whole within the guard's bounds first). Session calls, and everything else, go
on."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass

from core.asgi_types import ASGIApp, Receive, Scope, Send
from gateway.edge.body_limit import BodyLimit
from gateway.edge.caller import authenticate_bearer
from gateway.edge.completion import complete
from gateway.edge.entries import BY_PATH, Entry
from gateway.relay.attempts import Answer
from gateway.request.errors import GatewayError, internal_error
from gateway.request.tags import tags_of

log = logging.getLogger(__name__)

JSON = b"application/json"
EVENT_STREAM = b"text/event-stream"


class LeanCompletions:
    """In front of `django` (the guard, the operations routes, Django); `guard` bounds the
    bodies of the calls served here as it bounds those it passes on."""

    def __init__(self, django: ASGIApp, guard: BodyLimit) -> None:
        self.django, self.guard = django, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        entry = BY_PATH.get(scope["path"]) if scope["type"] == "http" else None
        if entry is not None:
            headers = _headers_of(scope)
            key = entry.key(headers)
            if key:
                raw = await self.guard.whole_body(scope, receive, send)
                if raw is not None:
                    await _serve(Asked(scope, entry, headers, key, raw), receive, send)
                return
        await self.django(scope, receive, send)


@dataclass(frozen=True, slots=True)
class Asked:
    """A call the lean route serves: its scope, route, headers by name, key and whole body."""

    scope: Scope
    entry: Entry
    headers: dict[bytes, bytes]
    key: str
    raw: bytes


async def _serve(asked: Asked, receive: Receive, send: Send) -> None:
    handler = asyncio.current_task()
    state = {"finished": False, "gone": False}

    async def watch() -> None:
        message = await receive()
        if message["type"] == "http.disconnect" and not state["finished"] and handler:
            state["gone"] = True
            handler.cancel()

    watcher = asyncio.create_task(watch())
    try:
        await _answer(asked, send, state)
    except asyncio.CancelledError:
        if not state["gone"]:
            raise
    finally:
        watcher.cancel()


async def _answer(asked: Asked, send: Send, state: dict[str, bool]) -> None:
    request_id = secrets.token_hex(16)
    headers, entry = asked.headers, asked.entry
    content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    try:
        answer = await complete(
            request_id,
            asked.scope["method"],
            content_type.decode("latin-1"),
            asked.raw,
            lambda: authenticate_bearer(asked.key),
            tags_of(headers),
            headers.get(b"traceparent", b"").decode("latin-1"),
            entry,
        )
    except GatewayError as exc:
        status, body = entry.error(exc)
        await _send_whole(send, status, _headers(request_id, JSON, exc.headers or {}), body, state)
        return
    except Exception:
        log.exception("%s call %s failed inside Momor", entry.api, request_id)
        status, body = entry.error(internal_error())
        await _send_whole(send, status, _headers(request_id, JSON, {}), body, state)
        return
    await _send_answer(send, request_id, answer, state)


async def _send_answer(send: Send, request_id: str, answer: Answer, state: dict[str, bool]) -> None:
    if isinstance(answer.body, bytes):
        headers = _headers(request_id, JSON, answer.headers)
        await _send_whole(send, answer.status, headers, answer.body, state)
        return
    headers = _headers(request_id, EVENT_STREAM, answer.headers)
    headers.append((b"x-accel-buffering", b"no"))
    await _send_stream(send, answer.status, headers, answer.body, state)


async def _send_whole(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes, state: dict[str, bool]
) -> None:
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    state["finished"] = True
    await send({"type": "http.response.body", "body": body})


async def _send_stream(
    send: Send,
    status: int,
    headers: list[tuple[bytes, bytes]],
    chunks: AsyncIterator[bytes],
    state: dict[str, bool],
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    try:
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        state["finished"] = True
        await send({"type": "http.response.body", "body": b""})
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]  # an async generator; Answer.body types it as its iterator


def _headers(
    request_id: str, content_type: bytes, extra: dict[str, str]
) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", content_type), (b"x-momor-request-id", request_id.encode())]
    for name, value in extra.items():
        encoded = _NAMES.get(name)
        if encoded is None:
            encoded = _NAMES[name] = name.lower().encode()
        headers.append((encoded, value.encode()))
    return headers


# Header names as ASGI wants them, encoded once: the same few on every answer.
_NAMES: dict[str, bytes] = {}


def _headers_of(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by name (ASGI servers give names in lowercase); of a header sent
    twice, the first."""
    return dict(reversed(scope["headers"]))
