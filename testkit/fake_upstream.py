"""The fake upstream: an aiohttp server that stands in for LLM providers in tests and benchmarks.

This module holds what every protocol shares: the scripted behaviour per model id (`Behaviour`,
set through `POST /_fake/script`), the record of received calls (`GET /_fake/requests`), the
timing and failure machinery (delays, scripted errors, dropped connections, client disconnects)
and the command line entry point. Protocol modules (`fake_openai`...) only translate a
`Behaviour` into their wire format and register their routes; `protocols()` lists them.

Malformed answers are scripted as raw bytes, base64 in the script: `raw_body` is a plain 2xx
answer's whole body, sent as it is; `inject` (`{"after": N, "data": ...}`) writes its bytes into a
stream after the opening events and N content events (a line that is not JSON, invalid UTF-8).

Run it with `python -m testkit.fake_upstream --port 0`: it prints one line
`listening on http://HOST:PORT` and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import re
import signal
import socket
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol, TypeVar

import orjson
from aiohttp import web
from multidict import CIMultiDict

Json = dict[str, Any]
Register = Callable[[web.Application], None]
T = TypeVar("T")

DEFAULT_TEXT = "Hello from the fake upstream."
DEFAULT_MAX_RECORDS = 10_000
_WORDS = re.compile(r"\s*\S+\s*$|\s*\S+")


class ScriptError(ValueError):
    """A `POST /_fake/script` body that does not describe a behaviour."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str

    @cached_property
    def argument_pieces(self) -> list[str]:
        return split_text(self.arguments)


@dataclass(frozen=True)
class Failure:
    status: int
    body: Json | str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Injection:
    """Raw bytes written into a stream after the opening events and `after` content events."""

    after: int
    data: bytes


@dataclass(frozen=True)
class Behaviour:
    """How the fake answers one model id; the defaults are the unscripted answer."""

    text: str | None = None
    chunks: int | None = None
    chunk_delay: float = 0.0
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Json = field(default_factory=dict)
    extra: Json = field(default_factory=dict)
    response: Json | None = None
    fail: Failure | None = None
    fail_times: int | None = None
    delay_first_byte: float = 0.0
    drop_after: int | None = None
    stream_error_after: int | None = None
    stream_error_message: str | None = None
    no_usage: bool = False
    raw_body: bytes | None = None
    inject: Injection | None = None
    text_signature: bool = False
    """Gemini: the answer's text carries a thought signature (Gemini 3's last text part)."""
    tool_round_trip: bool = False
    """An agent's turn: the tool calls are answered until the call carries a tool's result,
    then the text alone (the protocol's own result shape: a `tool` message, a `tool_result`
    block, a `function_call_output` item, a `functionResponse` part)."""

    def answering(self, body: Any) -> Behaviour:
        """The behaviour for a call with this body."""
        if not self.tool_round_trip:
            return self
        if carries_tool_result(body):
            return replace(self, tool_calls=())
        return replace(self, text=None)

    @property
    def content(self) -> str | None:
        """The answer text: the scripted one, none beside tool calls, else the default."""
        if self.text is not None:
            return self.text
        return None if self.tool_calls else DEFAULT_TEXT

    @cached_property
    def content_pieces(self) -> list[str]:
        content = self.content
        return [] if content is None else split_text(content, self.chunks)

    @cached_property
    def reasoning_pieces(self) -> list[str]:
        return [] if self.reasoning is None else split_text(self.reasoning)


DEFAULT_BEHAVIOUR = Behaviour()
_TOOL_RESULT_TYPES = frozenset({"tool_result", "function_call_output"})


def carries_tool_result(value: Any) -> bool:
    """Whether a call's body, in any protocol, holds a tool's result anywhere."""
    if isinstance(value, list):
        return any(carries_tool_result(item) for item in value)
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if value.get("role") == "tool" or (isinstance(kind, str) and kind in _TOOL_RESULT_TYPES):
        return True
    if "functionResponse" in value:
        return True
    return any(carries_tool_result(item) for item in value.values())


def split_text(text: str, parts: int | None = None) -> list[str]:
    """`parts` even pieces of `text`, or one piece per word with its leading spaces."""
    if parts is not None:
        return _even_pieces(text, parts)
    return _WORDS.findall(text) or ([text] if text else [])


def _even_pieces(text: str, parts: int) -> list[str]:
    size, rest = divmod(len(text), parts)
    pieces, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < rest else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def parse_script(data: object) -> tuple[str, Behaviour]:
    """The model id and behaviour of a `POST /_fake/script` body; raises `ScriptError`."""
    if not isinstance(data, dict):
        raise ScriptError("the script must be a JSON object")
    unknown = sorted(set(data) - set(_SCRIPT_KEYS) - {"model"})
    if unknown:
        raise ScriptError(f"unknown script keys: {', '.join(unknown)}")
    model = _read_str(data.get("model"), "model")
    behaviour = Behaviour(
        **{key: _SCRIPT_KEYS[key](data[key], key) for key in data if key != "model"}
    )
    if behaviour.fail_times is not None and behaviour.fail is None:
        raise ScriptError("fail_times needs fail")
    return model, behaviour


def _read_str(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ScriptError(f"{key} must be a string")
    return value


def _read_count(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScriptError(f"{key} must be an integer >= 0")
    return value


def _read_chunks(value: object, key: str) -> int:
    count = _read_count(value, key)
    if count < 1:
        raise ScriptError(f"{key} must be an integer >= 1")
    return count


def _read_seconds(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ScriptError(f"{key} must be a number of seconds >= 0")
    return float(value)


def _read_object(value: object, key: str) -> Json:
    if not isinstance(value, dict):
        raise ScriptError(f"{key} must be an object")
    return value


def _read_bool(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ScriptError(f"{key} must be true or false")
    return value


def _read_base64(value: object, key: str) -> bytes:
    try:
        return base64.b64decode(_read_str(value, key), validate=True)
    except binascii.Error:
        raise ScriptError(f"{key} must be base64") from None


def _read_injection(value: object, key: str) -> Injection:
    item = _read_object(value, key)
    after = _read_count(item.get("after", 0), f"{key}.after")
    return Injection(after=after, data=_read_base64(item.get("data"), f"{key}.data"))


def _read_tool_calls(value: object, key: str) -> tuple[ToolCall, ...]:
    if not isinstance(value, list) or not value:
        raise ScriptError(f"{key} must be a non-empty list")
    return tuple(
        _read_tool_call(item, f"{key}[{index}]", index) for index, item in enumerate(value)
    )


def _read_tool_call(value: object, key: str, index: int) -> ToolCall:
    item = _read_object(value, key)
    call_id = item.get("id", f"call_fake_{index}")
    return ToolCall(
        id=_read_str(call_id, f"{key}.id"),
        name=_read_str(item.get("name"), f"{key}.name"),
        arguments=_read_str(item.get("arguments", "{}"), f"{key}.arguments"),
    )


def _read_failure(value: object, key: str) -> Failure:
    item = _read_object(value, key)
    status = item.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"{key}.status must be an HTTP error status (400-599)")
    body = item.get("body")
    if body is not None and not isinstance(body, dict | str):
        raise ScriptError(f"{key}.body must be an object or a string")
    headers = _read_object(item.get("headers", {}), f"{key}.headers")
    return Failure(status=status, body=body, headers={k: str(v) for k, v in headers.items()})


_SCRIPT_KEYS: dict[str, Callable[[object, str], Any]] = {
    "text": _read_str,
    "chunks": _read_chunks,
    "chunk_delay": _read_seconds,
    "reasoning": _read_str,
    "reasoning_field": _read_str,
    "tool_calls": _read_tool_calls,
    "finish_reason": _read_str,
    "usage": _read_object,
    "extra": _read_object,
    "response": _read_object,
    "fail": _read_failure,
    "fail_times": _read_count,
    "delay_first_byte": _read_seconds,
    "drop_after": _read_count,
    "stream_error_after": _read_count,
    "stream_error_message": _read_str,
    "no_usage": _read_bool,
    "raw_body": _read_base64,
    "inject": _read_injection,
    "text_signature": _read_bool,
    "tool_round_trip": _read_bool,
}


@dataclass
class Record:
    """One received call, as `GET /_fake/requests` lists it."""

    path: str
    method: str
    headers: dict[str, str]
    body: Any
    model: str | None
    disconnected: bool = False
    completed: bool = False

    def as_json(self) -> Json:
        return {
            "path": self.path,
            "method": self.method,
            "headers": self.headers,
            "body": self.body,
            "model": self.model,
            "disconnected": self.disconnected,
            "completed": self.completed,
        }


@dataclass(frozen=True)
class SseEvents:
    """A protocol's whole stream for one call, cut where scripted failures can strike.

    `head` opens the stream, `body` holds the content chunks that `drop_after` and
    `stream_error_after` count, `tail` closes it normally and `error` is the protocol's
    mid-stream error event.
    """

    head: list[bytes]
    body: list[bytes]
    tail: list[bytes]
    error: bytes


class Answer(Protocol):
    """What a protocol module builds for one valid call; the upstream picks the part to send."""

    @property
    def stream(self) -> bool: ...

    def plain(self, behaviour: Behaviour) -> web.StreamResponse: ...

    def events(self, behaviour: Behaviour) -> SseEvents: ...

    def failure(self, fail: Failure) -> web.StreamResponse: ...


SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


def json_response(data: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def failure_response(fail: Failure, default_body: Json) -> web.Response:
    """The scripted error answer; `default_body` is the protocol's error object for it."""
    body = default_body if fail.body is None else fail.body
    if isinstance(body, str):
        content, content_type = body.encode(), "text/plain; charset=utf-8"
    else:
        content, content_type = orjson.dumps(body), "application/json"
    headers = CIMultiDict({"Content-Type": content_type})
    headers.update(fail.headers)
    return web.Response(body=content, status=fail.status, headers=headers)


def stream_plan(events: SseEvents, behaviour: Behaviour) -> tuple[list[bytes], bool]:
    """The events to write and whether to drop the connection after them."""
    sequence, drop = _cut(events, behaviour)
    if behaviour.inject is not None:
        sequence.insert(len(events.head) + behaviour.inject.after, behaviour.inject.data)
    return sequence, drop


def _cut(events: SseEvents, behaviour: Behaviour) -> tuple[list[bytes], bool]:
    drop, error = behaviour.drop_after, behaviour.stream_error_after
    if drop is not None and (error is None or drop <= error):
        return [*events.head, *events.body[:drop]], True
    if error is not None:
        return [*events.head, *events.body[:error], events.error], False
    return [*events.head, *events.body, *events.tail], False


class Upstream:
    """The fake's state: scripts per model id, calls per model since scripted, and records."""

    def __init__(self, max_records: int = DEFAULT_MAX_RECORDS) -> None:
        self.scripts: dict[str, Behaviour] = {}
        self.calls: dict[str, int] = {}
        self.records: deque[Record] = deque(maxlen=max_records)

    def script(self, model: str, behaviour: Behaviour) -> None:
        self.scripts[model] = behaviour
        self.calls.pop(model, None)

    def reset(self) -> None:
        self.scripts.clear()
        self.calls.clear()
        self.records.clear()

    def record(self, request: web.Request, body: Any, model: str | None) -> Record:
        headers = {name.lower(): value for name, value in request.headers.items()}
        record = Record(request.path, request.method, headers, body, model)
        self.records.append(record)
        return record

    def listed(self, model: str | None) -> list[Json]:
        return [r.as_json() for r in self.records if model is None or r.model == model]

    async def refuse(
        self, request: web.Request, record: Record, response: web.StreamResponse
    ) -> web.StreamResponse:
        """Send a protocol's own refusal (a malformed call), whatever the script says."""
        return await self._guarded(record, _send(request, record, response))

    async def serve(
        self, request: web.Request, model: str, record: Record, answer: Answer
    ) -> web.StreamResponse:
        """Answer a valid call as scripted for `model`."""
        behaviour, failing = self._next_call(model)
        behaviour = behaviour.answering(record.body)
        return await self._guarded(
            record, self._answer(request, record, answer, behaviour, failing)
        )

    def _next_call(self, model: str) -> tuple[Behaviour, bool]:
        behaviour = self.scripts.get(model, DEFAULT_BEHAVIOUR)
        calls = self.calls.get(model, 0)
        self.calls[model] = calls + 1
        limit = behaviour.fail_times
        return behaviour, behaviour.fail is not None and (limit is None or calls < limit)

    async def _guarded(
        self, record: Record, answering: Awaitable[web.StreamResponse]
    ) -> web.StreamResponse:
        try:
            response = await answering
        except ConnectionError:
            record.disconnected = True
            return web.Response()
        except asyncio.CancelledError:
            record.disconnected = True
            raise
        return response

    async def _answer(
        self,
        request: web.Request,
        record: Record,
        answer: Answer,
        behaviour: Behaviour,
        failing: bool,
    ) -> web.StreamResponse:
        if behaviour.delay_first_byte:
            await asyncio.sleep(behaviour.delay_first_byte)
        if behaviour.drop_after == 0:
            return _drop(request)
        key = credential(request)
        if failing and behaviour.fail is not None:
            fail = with_key(behaviour.fail, key)
            return await _send(request, record, answer.failure(fail))
        if behaviour.raw_body is not None and not answer.stream:
            raw = web.Response(body=behaviour.raw_body, content_type="application/json")
            return await _send(request, record, raw)
        if answer.stream:
            events = answer.events(behaviour)
            events = replace(events, error=events.error.replace(b"{key}", _json_text(key)))
            return await _stream(request, record, behaviour, events)
        return await _send(request, record, answer.plain(behaviour))


def credential(request: web.Request) -> str:
    """The key a call carried, in whichever header its protocol puts it."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        return token
    for name in ("api-key", "x-api-key", "x-goog-api-key"):
        if request.headers.get(name):
            return request.headers[name]
    return request.query.get("key", "")


def with_key(fail: Failure, key: str) -> Failure:
    """The scripted failure with `{key}` in its body replaced by the key the call carried, as
    providers quote a refused key ("Incorrect API key provided: sk-...")."""
    return replace(fail, body=_put_key(fail.body, key))


def _put_key(value: Any, key: str) -> Any:
    if isinstance(value, str):
        return value.replace("{key}", key)
    if isinstance(value, dict):
        return {name: _put_key(item, key) for name, item in value.items()}
    if isinstance(value, list):
        return [_put_key(item, key) for item in value]
    return value


def _json_text(text: str) -> bytes:
    return orjson.dumps(text)[1:-1]


async def _send(
    request: web.Request, record: Record, response: web.StreamResponse
) -> web.StreamResponse:
    await response.prepare(request)
    await response.write_eof()
    record.completed = True
    return response


async def _stream(
    request: web.Request, record: Record, behaviour: Behaviour, events: SseEvents
) -> web.StreamResponse:
    sequence, drop = stream_plan(events, behaviour)
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    for index, event in enumerate(sequence):
        if index and behaviour.chunk_delay:
            await asyncio.sleep(behaviour.chunk_delay)
        await response.write(event)
    if drop:
        return _drop(request, response)
    await response.write_eof()
    record.completed = True
    return response


def _drop(request: web.Request, response: web.StreamResponse | None = None) -> web.StreamResponse:
    """Close the connection mid-answer; aiohttp then fails quietly to finish `response`."""
    if request.transport is not None:
        request.transport.close()
    return web.Response() if response is None else response


UPSTREAM = web.AppKey("upstream", Upstream)


async def _script(request: web.Request) -> web.Response:
    try:
        model, behaviour = parse_script(_loads(await request.read()))
    except ScriptError as error:
        return json_response({"error": str(error)}, status=400)
    request.app[UPSTREAM].script(model, behaviour)
    return json_response({"ok": True})


async def _requests(request: web.Request) -> web.Response:
    return json_response(request.app[UPSTREAM].listed(request.query.get("model")))


async def _reset(request: web.Request) -> web.Response:
    request.app[UPSTREAM].reset()
    return json_response({"ok": True})


async def _health(request: web.Request) -> web.Response:
    return json_response({"ok": True})


def _loads(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def protocols() -> list[Register]:
    """Every protocol the fake speaks: a new protocol module adds its import and its entry."""
    from testkit import fake_anthropic, fake_embeddings, fake_gemini, fake_openai, fake_responses

    return [
        fake_openai.register,
        fake_embeddings.register,
        fake_responses.register,
        fake_gemini.register,
        fake_anthropic.register,
    ]


def create_app(
    registrations: Sequence[Register] | None = None, *, max_records: int = DEFAULT_MAX_RECORDS
) -> web.Application:
    app = web.Application()
    app[UPSTREAM] = Upstream(max_records)
    app.router.add_post("/_fake/script", _script)
    app.router.add_get("/_fake/requests", _requests)
    app.router.add_post("/_fake/reset", _reset)
    app.router.add_get("/_fake/health", _health)
    for register in protocols() if registrations is None else registrations:
        register(app)
    return app


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve(host: str, port: int, *, max_records: int = DEFAULT_MAX_RECORDS) -> None:
    """Serve until SIGTERM or SIGINT, announcing the address on stdout once listening."""
    runner = web.AppRunner(
        create_app(max_records=max_records), access_log=None, handler_cancellation=True
    )
    await runner.setup()
    sock = _bind(host, port)
    await web.SockSite(runner, sock).start()
    sys.stdout.write(f"listening on {_url(sock)}\n")
    sys.stdout.flush()
    try:
        await _signalled()
    finally:
        await runner.cleanup()


async def _signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake LLM upstream for tests and benchmarks.")
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-records", type=int, default=DEFAULT_MAX_RECORDS)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.host, args.port, max_records=args.max_records))


if __name__ == "__main__":
    # Run the importable module rather than this `__main__` copy, so the protocol modules
    # and the app share one UPSTREAM key.
    from testkit.fake_upstream import main as _main

    _main()
