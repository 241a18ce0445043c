"""Anthropic's Messages API for the fake upstream: `POST .../v1/messages`, its request checks,
the plain `message` answer and the streamed event sequence, shaped like api.anthropic.com's;
and `POST .../v1/messages/count_tokens`, its body checked against the SDK's
`MessageCountTokensParams` and the API's rules on messages and tools, answering
`{"input_tokens": N}`.

A `Behaviour` becomes Anthropic's wire format: `reasoning` a thinking block signed with
`fake_signature` (or, with `reasoning_field: "redacted_thinking"`, a redacted thinking block
holding the text as its data), `text` and `chunks` a text block, `tool_calls` tool_use blocks
(arguments parsed into `input`), `finish_reason` the native `stop_reason`, `usage` Anthropic's
usage keys merged over the default ones and `extra` top-level keys of the message.

A body the real API refuses is refused with Anthropic's 400 (`invalid_request_error`): the
shape is held to the official SDK's request types (`anthropic.types.MessageCreateParamsBase`,
validated strictly with pydantic, and its keys as the only top-level fields besides `stream` and
the sampling parameters), then the API's own rules are checked: alternating roles, no system
role among messages, non-empty content, each tool_use answered by a tool_result in the next
message, the thinking budget, and on replay the thinking blocks' signatures.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import count

import orjson
from aiohttp import web
from anthropic.types.message_count_tokens_params import MessageCountTokensParams
from anthropic.types.message_create_params import MessageCreateParamsBase
from pydantic import TypeAdapter, ValidationError

from testkit.fake_openai import completion_tokens, prompt_tokens
from testkit.fake_upstream import (
    UPSTREAM,
    Behaviour,
    Failure,
    Json,
    SseEvents,
    ToolCall,
    failure_response,
    json_response,
)

API_VERSION_HEADER = "anthropic-version"
# The SDK (1.0 and later) dropped these from its types, but the API still takes them on the
# models that sample (anthropic-sdk-python MIGRATION.md, "Removed deprecated request
# parameters").
SAMPLING = frozenset({"temperature", "top_p", "top_k"})
TOP_LEVEL = frozenset(MessageCreateParamsBase.__annotations__) | SAMPLING | {"stream"}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MIN_BUDGET = 1024
REDACTED = "redacted_thinking"
KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
MID_STREAM = {"type": "overloaded_error", "message": "Overloaded"}


COUNT_TOP_LEVEL = frozenset(MessageCountTokensParams.__annotations__)


def register(app: web.Application) -> None:
    app.router.add_post("/{prefix:(?:.*/)?}v1/messages", messages)
    app.router.add_post("/{prefix:(?:.*/)?}v1/messages/count_tokens", count_tokens)


async def messages(request: web.Request) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    try:
        body: object = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        body = None
    model = body.get("model") if isinstance(body, dict) else None
    record = upstream.record(request, body, model if isinstance(model, str) else None)
    checked = _checked(request, body)
    if isinstance(checked, web.Response):
        return await upstream.refuse(request, record, checked)
    return await upstream.serve(request, checked["model"], record, MessagesAnswer(checked))


async def count_tokens(request: web.Request) -> web.StreamResponse:
    """`POST /v1/messages/count_tokens`: the input tokens a Messages call would take, counted as
    the call's answer counts them; a scripted failure of the model fails it too."""
    upstream = request.app[UPSTREAM]
    try:
        body: object = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        body = None
    model = body.get("model") if isinstance(body, dict) else None
    record = upstream.record(request, body, model if isinstance(model, str) else None)
    checked = _checked(request, body, count=True)
    if isinstance(checked, web.Response):
        return await upstream.refuse(request, record, checked)
    return await upstream.serve(request, checked["model"], record, CountAnswer(checked))


def _mid_stream(behaviour: Behaviour) -> Json:
    if behaviour.stream_error_message is None:
        return MID_STREAM
    return {**MID_STREAM, "message": behaviour.stream_error_message}


def error_body(kind: str, message: str) -> Json:
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_fake{uuid.uuid4().hex[:20]}",
    }


def _checked(request: web.Request, body: object, *, count: bool = False) -> Json | web.Response:
    """The body of a call the API takes (a token count's, with `count`), else the API's
    refusal."""
    # The API takes its key as x-api-key or, as the SDK (2.x) sends it, as a Bearer token.
    if not request.headers.get("x-api-key") and not _bearer(request):
        return json_response(
            error_body("authentication_error", "x-api-key header is required"), 401
        )
    if not request.headers.get(API_VERSION_HEADER):
        message = "anthropic-version: header is required"
        return json_response(error_body("invalid_request_error", message), 400)
    problem = invalid_count(body) if count else invalid(body)
    if problem is not None or not isinstance(body, dict):
        return json_response(error_body("invalid_request_error", str(problem)), 400)
    return body


def _bearer(request: web.Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" else ""


def fake_signature(thinking: str) -> str:
    """The signature the fake gives a thinking block, and checks when it is sent back."""
    return "fakesig_" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


# Checks: first the SDK's types, then the API's own rules.


class Invalid(Exception):
    """A body the API refuses, with Anthropic's wording."""


def invalid(body: object) -> str | None:
    """Why the API would refuse this body, or None."""
    try:
        _check(body)
    except Invalid as problem:
        return str(problem)
    return None


def invalid_count(body: object) -> str | None:
    """Why the API would refuse this count_tokens body, or None."""
    try:
        _check_count(body)
    except Invalid as problem:
        return str(problem)
    return None


def _check_count(body: object) -> None:
    if not isinstance(body, dict):
        raise Invalid("There was an error parsing the body of your request. It must be JSON.")
    unknown = sorted(set(body) - COUNT_TOP_LEVEL)
    if unknown:
        raise Invalid(f"{unknown[0]}: Extra inputs are not permitted")
    for key in ("messages", "model"):
        if key not in body:
            raise Invalid(f"{key}: Field required")
    try:
        _drain(_count_params().validate_python(body, strict=True), "")
    except ValidationError as error:
        raise Invalid(_described(error, "")) from None
    _check_messages(body["messages"])
    _check_tools(body)


@cache
def _count_params() -> TypeAdapter[MessageCountTokensParams]:
    return TypeAdapter(MessageCountTokensParams)


def _check(body: object) -> None:
    if not isinstance(body, dict):
        raise Invalid("There was an error parsing the body of your request. It must be JSON.")
    unknown = sorted(set(body) - TOP_LEVEL)
    if unknown:
        raise Invalid(f"{unknown[0]}: Extra inputs are not permitted")
    for key in ("max_tokens", "messages", "model"):
        if key not in body:
            raise Invalid(f"{key}: Field required")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Invalid("stream: Input should be a valid boolean")
    _check_types({k: v for k, v in body.items() if k not in SAMPLING and k != "stream"})
    _check_messages(body["messages"])
    _check_tools(body)
    _check_thinking(body)


@cache
def _params() -> TypeAdapter[MessageCreateParamsBase]:
    return TypeAdapter(MessageCreateParamsBase)


def _check_types(body: Json) -> None:
    try:
        _drain(_params().validate_python(body, strict=True), "")
    except ValidationError as error:
        raise Invalid(_described(error, "")) from None


def _drain(value: object, path: str) -> object:
    """Consume the SDK's `Iterable` fields, which pydantic validates lazily."""
    if isinstance(value, dict):
        return {k: _drain(v, _at(path, k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_drain(v, _at(path, i)) for i, v in enumerate(value)]
    if isinstance(value, Iterator):
        items = []
        for index in count():
            try:
                item = next(value)
            except StopIteration:
                break
            except ValidationError as error:
                raise Invalid(_described(error, _at(path, index))) from None
            items.append(_drain(item, _at(path, index)))
        return items
    return value


def _at(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _described(error: ValidationError, path: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if not str(p).endswith("Param"))
    return f"{_at(path, where) if where else path}: {first['msg']}"


def _check_messages(messages: list[Json]) -> None:
    if not messages:
        raise Invalid("messages: at least one message is required")
    previous: Json | None = None
    for index, message in enumerate(messages):
        _check_message(index, message, previous, last=index == len(messages) - 1)
        previous = message
    _check_tool_results(messages)


def _check_message(index: int, message: Json, previous: Json | None, *, last: bool) -> None:
    role = message["role"]
    if role == "system":
        raise Invalid(
            'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
            'parameter, not "system" as an input message role.'
        )
    # Stricter than today's API, which combines consecutive turns of one role: Momor merges
    # them itself, and the fake holds it to that.
    if previous is not None and previous["role"] == role:
        raise Invalid(
            'messages: roles must alternate between "user" and "assistant", but found multiple '
            f'"{role}" roles in a row'
        )
    content = message["content"]
    if not content and not (last and role == "assistant"):
        raise Invalid(
            f"messages.{index}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    for block in content if isinstance(content, list) else ():
        if block["type"] == "text" and not block["text"]:
            raise Invalid("messages: text content blocks must be non-empty")


def _blocks(message: Json, kind: str) -> list[Json]:
    content = message["content"]
    return [b for b in content if b["type"] == kind] if isinstance(content, list) else []


def _check_tool_results(messages: list[Json]) -> None:
    for index, message in enumerate(messages):
        previous = messages[index - 1] if index else None
        asked = {b["id"] for b in _blocks(previous, "tool_use")} if previous else set()
        unexpected = sorted({b["tool_use_id"] for b in _blocks(message, "tool_result")} - asked)
        if unexpected:
            raise Invalid(
                f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{unexpected[0]}. Each `tool_result` block must have a corresponding `tool_use` "
                "block in the previous message."
            )
        if index + 1 < len(messages):
            _check_answered(index, message, messages[index + 1])


def _check_answered(index: int, message: Json, following: Json) -> None:
    answered = {b["tool_use_id"] for b in _blocks(following, "tool_result")}
    missing = [b["id"] for b in _blocks(message, "tool_use") if b["id"] not in answered]
    if missing:
        raise Invalid(
            f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )


def _check_tools(body: Json) -> None:
    tools = body.get("tools") or []
    for index, tool in enumerate(tools):
        if not TOOL_NAME.match(str(tool.get("name"))):
            raise Invalid(
                f"tools.{index}.custom.name: String should match pattern '{TOOL_NAME.pattern}'"
            )
    if "tool_choice" in body and not tools:
        raise Invalid("tool_choice: tool_choice may only be specified while providing tools")


def _check_thinking(body: Json) -> None:
    thinking = body.get("thinking") or {}
    _check_signatures(body["messages"])
    if thinking.get("type") != "enabled":
        return
    budget = thinking["budget_tokens"]
    if budget < MIN_BUDGET:
        raise Invalid(
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
        )
    if body["max_tokens"] <= budget:
        raise Invalid("`max_tokens` must be greater than `thinking.budget_tokens`.")
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        raise Invalid("Thinking may not be enabled when tool_choice forces tool use.")
    if body.get("temperature", 1) != 1:
        raise Invalid("`temperature` may only be set to 1 when thinking is enabled.")
    _check_thinking_first(body["messages"])


def _check_signatures(messages: list[Json]) -> None:
    for index, message in enumerate(messages):
        for position, block in enumerate(
            message["content"] if isinstance(message["content"], list) else ()
        ):
            if block["type"] == "thinking" and block["signature"] != fake_signature(
                block["thinking"]
            ):
                raise Invalid(
                    f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
                )


def _check_thinking_first(messages: list[Json]) -> None:
    """With thinking on, the assistant turn of a tool loop in progress must start with its
    thinking (https://docs.claude.com/en/docs/build-with-claude/extended-thinking)."""
    if len(messages) < 2 or not _blocks(messages[-1], "tool_result"):
        return
    index = len(messages) - 2
    content = messages[index]["content"]
    first = content[0]["type"] if isinstance(content, list) and content else "text"
    if first not in ("thinking", REDACTED):
        raise Invalid(
            f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start "
            "with a thinking block."
        )


# Answers


def _sse(kind: str, data: Json) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **data}) + b"\n\n"


def stop_reason(behaviour: Behaviour) -> str:
    if behaviour.finish_reason is not None:
        return behaviour.finish_reason
    return "tool_use" if behaviour.tool_calls else "end_turn"


def _input(call: ToolCall) -> Json:
    try:
        parsed = orjson.loads(call.arguments)
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _thinking_block(behaviour: Behaviour) -> Json | None:
    text = behaviour.reasoning
    if text is None:
        return None
    if behaviour.reasoning_field == REDACTED:
        return {"type": REDACTED, "data": text}
    return {"type": "thinking", "thinking": text, "signature": fake_signature(text)}


def content_blocks(behaviour: Behaviour) -> list[Json]:
    blocks = [b for b in [_thinking_block(behaviour)] if b is not None]
    if behaviour.content is not None:
        blocks.append({"type": "text", "text": behaviour.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
        for call in behaviour.tool_calls
    )
    return blocks


@dataclass(frozen=True)
class Piece:
    """One content chunk of the stream (what drop_after and stream_error_after count)."""

    events: tuple[bytes, ...]

    @property
    def bytes(self) -> bytes:
        return b"".join(self.events)


class MessagesAnswer:
    """The answers to one valid Messages API call."""

    def __init__(self, body: Json) -> None:
        self.model: str = body["model"]
        self.stream = body.get("stream") is True
        self.input_tokens = prompt_tokens(body["messages"]) + _system_words(body.get("system"))
        self.id = f"msg_fake{uuid.uuid4().hex[:24]}"

    def usage(self, behaviour: Behaviour) -> Json:
        usage: Json = {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": completion_tokens(behaviour),
            "service_tier": "standard",
        }
        if behaviour.reasoning is not None:
            usage["output_tokens_details"] = {"thinking_tokens": len(behaviour.reasoning_pieces)}
        return {**usage, **behaviour.usage}

    def _message(self, content: list[Json], stop: str | None, usage: Json) -> Json:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        message = self._message(
            content_blocks(behaviour), stop_reason(behaviour), self.usage(behaviour)
        )
        return json_response({**message, **behaviour.extra})

    def events(self, behaviour: Behaviour) -> SseEvents:
        usage = self.usage(behaviour)
        opening = {**usage, "output_tokens": 1}
        opening.pop("output_tokens_details", None)
        head = [
            _sse(
                "message_start",
                {"message": {**self._message([], None, opening), **behaviour.extra}},
            ),
            _sse("ping", {}),
        ]
        delta = {"stop_reason": stop_reason(behaviour), "stop_sequence": None}
        final = {k: v for k, v in usage.items() if k != "service_tier"}
        tail = [_sse("message_delta", {"delta": delta, "usage": final}), _sse("message_stop", {})]
        body = [piece.bytes for piece in stream_pieces(behaviour)]
        return SseEvents(
            head=head, body=body, tail=tail, error=_sse("error", {"error": _mid_stream(behaviour)})
        )

    def failure(self, fail: Failure) -> web.Response:
        kind = KINDS.get(
            fail.status, "api_error" if fail.status >= 500 else "invalid_request_error"
        )
        message = f"The fake upstream was scripted to fail with status {fail.status}."
        return failure_response(fail, error_body(kind, message))


class CountAnswer:
    """The answer to one valid count_tokens call: the input tokens its messages and system
    would count in a Messages answer."""

    stream = False

    def __init__(self, body: Json) -> None:
        self.input_tokens = prompt_tokens(body["messages"]) + _system_words(body.get("system"))

    def plain(self, behaviour: Behaviour) -> web.Response:
        return json_response({"input_tokens": self.input_tokens})

    def events(self, behaviour: Behaviour) -> SseEvents:
        return SseEvents(head=[], body=[], tail=[], error=b"")  # a token count never streams

    def failure(self, fail: Failure) -> web.Response:
        kind = KINDS.get(
            fail.status, "api_error" if fail.status >= 500 else "invalid_request_error"
        )
        message = f"The fake upstream was scripted to fail with status {fail.status}."
        return failure_response(fail, error_body(kind, message))


def _system_words(system: object) -> int:
    if isinstance(system, str):
        return len(system.split())
    blocks = system if isinstance(system, list) else []
    return sum(len(str(b.get("text", "")).split()) for b in blocks if isinstance(b, dict))


def stream_pieces(behaviour: Behaviour) -> list[Piece]:
    """The content blocks as streamed: each block's start rides with its first piece and its
    stop (and a thinking block's signature) with its last."""
    pieces: list[Piece] = []
    index = 0
    thinking = _thinking_block(behaviour)
    if thinking is not None and thinking["type"] == REDACTED:
        pieces.append(_whole_block(index, thinking))
        index += 1
    elif thinking is not None:
        signature = _delta(index, {"type": "signature_delta", "signature": thinking["signature"]})
        deltas = [
            _delta(index, {"type": "thinking_delta", "thinking": p})
            for p in behaviour.reasoning_pieces
        ]
        pieces.extend(
            _block(
                index, {"type": "thinking", "thinking": "", "signature": ""}, deltas, [signature]
            )
        )
        index += 1
    if behaviour.content_pieces:
        deltas = [
            _delta(index, {"type": "text_delta", "text": p}) for p in behaviour.content_pieces
        ]
        pieces.extend(_block(index, {"type": "text", "text": ""}, deltas, []))
        index += 1
    for call in behaviour.tool_calls:
        start = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        deltas = [
            _delta(index, {"type": "input_json_delta", "partial_json": p})
            for p in call.argument_pieces
        ]
        pieces.extend(_block(index, start, [b"", *deltas], []))
        index += 1
    return pieces


def _delta(index: int, delta: Json) -> bytes:
    return _sse("content_block_delta", {"index": index, "delta": delta})


def _whole_block(index: int, block: Json) -> Piece:
    start = _sse("content_block_start", {"index": index, "content_block": block})
    return Piece((start, _sse("content_block_stop", {"index": index})))


def _block(index: int, start: Json, deltas: list[bytes], closing: list[bytes]) -> list[Piece]:
    opening = _sse("content_block_start", {"index": index, "content_block": start})
    stop = _sse("content_block_stop", {"index": index})
    if not deltas:
        return [Piece((opening, *closing, stop))]
    pieces = [Piece((d,)) for d in deltas]
    pieces[0] = Piece((opening, *pieces[0].events))
    pieces[-1] = Piece((*pieces[-1].events, *closing, stop))
    return pieces
