"""OpenAI Chat Completions for the fake upstream: the request checks, the plain `chat.completion`
answer and the SSE stream of `chat.completion.chunk` events, shaped like api.openai.com's.

It turns a `Behaviour` into wire bytes; scripting, timing and failures live in `fake_upstream`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from testkit.fake_upstream import (
    UPSTREAM,
    Answer,
    Behaviour,
    Failure,
    Json,
    SseEvents,
    ToolCall,
    failure_response,
    json_response,
)

SYSTEM_FINGERPRINT = "fp_fake_upstream"
MID_STREAM_MESSAGE = "The server had an error while processing your request. Sorry about that!"
NOT_JSON = object()
"""What `loads_body` reads of a body that is not JSON."""
_ERROR_KINDS = {
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
}


def register(app: web.Application) -> None:
    app.router.add_post("/{prefix:(?:.*/)?}chat/completions", chat_completions)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def openai_route(
    check: Callable[[object], Json | Invalid], answer_of: Callable[[Json], Answer]
) -> Handler:
    """An endpoint of OpenAI's that takes a JSON body naming its `model`: the call recorded,
    checked (`check`: OpenAI's 400 for what it refuses) and answered (`answer_of`)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        upstream = request.app[UPSTREAM]
        body = loads_body(await request.read())
        model = body.get("model") if isinstance(body, dict) else None
        record = upstream.record(request, None if body is NOT_JSON else body, _str_or_none(model))
        checked = check(body)
        if isinstance(checked, Invalid):
            return await upstream.refuse(request, record, checked.response())
        return await upstream.serve(request, checked["model"], record, answer_of(checked))

    return handle


def loads_body(raw: bytes) -> object:
    """A request's body as JSON, or NOT_JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NOT_JSON


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Invalid:
    message: str
    param: str | None = None
    code: str | None = None

    def response(self) -> web.Response:
        return json_response(
            error_object(self.message, "invalid_request_error", self.param, self.code), 400
        )


def error_object(
    message: str, kind: str, param: str | None = None, code: str | None = None
) -> Json:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _check(body: object) -> Json | Invalid:
    """The body if it is a chat completions call, else the 400 OpenAI answers, in its wording."""
    if body is NOT_JSON:
        return Invalid("We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        return Invalid(
            f"Invalid type for body: expected an object, but got {_kind(body)} instead.",
            code="invalid_type",
        )
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return Invalid("you must provide a model parameter")
    return _invalid_messages(body) or body


def _invalid_messages(body: Json) -> Invalid | None:
    if "messages" not in body:
        return Invalid(
            "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
        )
    messages = body["messages"]
    if not isinstance(messages, list):
        return Invalid(
            f"Invalid type for 'messages': expected an array, but got {_kind(messages)} instead.",
            "messages",
            "invalid_type",
        )
    if not messages:
        return Invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "messages",
            "empty_array",
        )
    return None


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return kinds.get(type(value), "null" if value is None else "a number")


def failure_body(fail: Failure) -> Json:
    """OpenAI's error object for a scripted failure of this status."""
    kind, code = _ERROR_KINDS.get(
        fail.status, ("server_error" if fail.status >= 500 else "invalid_request_error", None)
    )
    message = f"The fake upstream was scripted to fail with status {fail.status}."
    return error_object(message, kind, None, code)


def prompt_tokens(messages: list[Any]) -> int:
    """A rough count: the words of every text in the messages, at least 1."""
    return max(1, sum(len(text.split()) for text in _texts(messages)))


def _texts(messages: list[Any]) -> Iterator[str]:
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            yield from (
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )


def completion_tokens(behaviour: Behaviour) -> int:
    """One token per streamed content chunk (reasoning, text, tool call header and fragment)."""
    calls = sum(1 + len(call.argument_pieces) for call in behaviour.tool_calls)
    return len(behaviour.reasoning_pieces) + len(behaviour.content_pieces) + calls


def finish_reason(behaviour: Behaviour) -> str:
    if behaviour.finish_reason is not None:
        return behaviour.finish_reason
    return "tool_calls" if behaviour.tool_calls else "stop"


def _sse(data: object) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def mid_stream(behaviour: Behaviour) -> str:
    return behaviour.stream_error_message or MID_STREAM_MESSAGE


class ChatAnswer:
    """The answers to one valid chat completions call."""

    def __init__(self, body: Json) -> None:
        self.model: str = body["model"]
        self.stream = body.get("stream") is True
        options = body.get("stream_options")
        self.include_usage = isinstance(options, dict) and options.get("include_usage") is True
        self.prompt_tokens = prompt_tokens(body["messages"])
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        completion: Json = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [_choice(behaviour)],
        }
        if not behaviour.no_usage:
            completion["usage"] = self.usage(behaviour)
        completion["system_fingerprint"] = SYSTEM_FINGERPRINT
        return json_response({**completion, **behaviour.extra})

    def usage(self, behaviour: Behaviour) -> Json:
        """The default usage with the scripted overrides merged in (top-level keys)."""
        completion = completion_tokens(behaviour)
        usage: Json = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": len(behaviour.reasoning_pieces)},
        }
        usage.update(behaviour.usage)
        prompt, completion = usage["prompt_tokens"], usage["completion_tokens"]
        if (
            "total_tokens" not in behaviour.usage
            and isinstance(prompt, int)
            and isinstance(completion, int)
        ):
            usage["total_tokens"] = prompt + completion
        return usage

    def events(self, behaviour: Behaviour) -> SseEvents:
        usage = self.include_usage and not behaviour.no_usage
        trailer = {**({"usage": None} if usage else {}), **behaviour.extra}
        opening = {"role": "assistant", "content": "", "refusal": None}
        tail = [self._chunk({}, finish_reason(behaviour), trailer)]
        if usage:
            tail.append(self._usage_chunk(behaviour))
        return SseEvents(
            head=[self._chunk(opening, None, trailer)],
            body=[self._chunk(delta, None, trailer) for delta in deltas(behaviour)],
            tail=[*tail, SSE_DONE],
            error=_sse(error_object(mid_stream(behaviour), "server_error")),
        )

    def failure(self, fail: Failure) -> web.Response:
        return failure_response(fail, failure_body(fail))

    def _envelope(self, choices: list[Json]) -> Json:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": choices,
        }

    def _chunk(self, delta: Json, finish: str | None, trailer: Json) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**self._envelope([choice]), **trailer})

    def _usage_chunk(self, behaviour: Behaviour) -> bytes:
        return _sse({**self._envelope([]), "usage": self.usage(behaviour), **behaviour.extra})


def _choice(behaviour: Behaviour) -> Json:
    message: Json = {"role": "assistant", "content": behaviour.content, "refusal": None}
    if behaviour.reasoning is not None:
        message[behaviour.reasoning_field] = behaviour.reasoning
    if behaviour.tool_calls:
        message["tool_calls"] = [_tool_call(call) for call in behaviour.tool_calls]
    return {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": finish_reason(behaviour),
    }


def _tool_call(call: ToolCall) -> Json:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def deltas(behaviour: Behaviour) -> list[Json]:
    """The stream's content deltas in order: reasoning, text, then each tool call."""
    field = behaviour.reasoning_field
    reasoning: list[Json] = [{field: piece} for piece in behaviour.reasoning_pieces]
    content: list[Json] = [{"content": piece} for piece in behaviour.content_pieces]
    calls = [
        delta
        for index, call in enumerate(behaviour.tool_calls)
        for delta in _tool_deltas(index, call)
    ]
    return [*reasoning, *content, *calls]


def _tool_deltas(index: int, call: ToolCall) -> Iterator[Json]:
    function = {"name": call.name, "arguments": ""}
    yield {
        "tool_calls": [{"index": index, "id": call.id, "type": "function", "function": function}]
    }
    for piece in call.argument_pieces:
        yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


chat_completions = openai_route(_check, ChatAnswer)
