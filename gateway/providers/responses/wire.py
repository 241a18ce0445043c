"""The Responses API's shapes that both ways share: the request as the client sent it
(`ResponsesRequest`), the Response object around an answer (`response_object`), usage in the
Responses API's terms both ways, a stream event's bytes, the two events a failed stream ends
on, and the reasoning Momor hands a client for a model other than OpenAI's (`momor_reasoning`).

Ids: a Response is `resp_` and Momor's request id, so a client can find the call's record
(`GET /v1/generation?id=...` takes the request id); an output item of a translated answer is
`msg_`, `rs_` or `fc_`, the request id and its output index."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, TypedDict

import orjson

from gateway.providers.contract import Json, Usage, token_count

RESPONSE_PREFIX = "resp_"
NAMESPACE_SEPARATOR = "__"
"""Joins a namespace tool's name and its function's into the one name an API without
namespaces knows the function by (Chat Completions' names take letters, digits, `_` and `-`)."""
MOMOR_REASONING = "momor:"
"""How the `encrypted_content` Momor writes begins: reasoning a model other than OpenAI's sent
(Anthropic's signed thinking, Gemini's thought signatures), to be replayed to a model that
reads it. OpenAI's own begins otherwise (it is OpenAI's encryption, not this)."""
LIFECYCLE = frozenset(
    {
        "response.created", "response.queued", "response.in_progress", "response.completed",
        "response.incomplete", "response.failed",
    }
)  # fmt: skip
"""The events that carry the whole Response (its `id`)."""


class ResponsesRequest(TypedDict, total=False):
    """A Responses call as the client sent it, Momor's routing fields left off: the fields
    Momor reads are named here, any other passes to OpenAI untouched."""

    input: str | list[Json]
    instructions: str
    model: str
    stream: bool
    store: bool
    tools: list[Json]
    tool_choice: str | Json
    parallel_tool_calls: bool
    text: Json
    reasoning: Json
    max_output_tokens: int
    max_tool_calls: int
    include: list[str]
    temperature: float
    top_p: float
    truncation: str
    metadata: dict[str, str]
    user: str
    previous_response_id: str
    conversation: str | Json
    background: bool
    prompt: Json


def namespaced(namespace: str, name: str) -> str:
    """The name a function of a namespace tool goes by where there are no namespaces."""
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}"


def namespaced_functions(request: ResponsesRequest) -> dict[str, tuple[str, str]]:
    """The functions of the call's namespace tools, by the name they go by where there are no
    namespaces: their namespace and their own name."""
    found: dict[str, tuple[str, str]] = {}
    for tool in request.get("tools") or ():
        if not isinstance(tool, dict) or tool.get("type") != "namespace":
            continue
        namespace, inner = tool.get("name"), tool.get("tools")
        if not isinstance(namespace, str) or not isinstance(inner, list):
            continue
        for function in inner:
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str) and function.get("type") == "function":
                found[namespaced(namespace, name)] = (namespace, name)
    return found


def response_id(request_id: str) -> str:
    """The Response's id for Momor's request id."""
    return RESPONSE_PREFIX + request_id


def item_id(kind: str, request_id: str, index: int) -> str:
    """An output item's id in a translated answer: `msg`, `rs` or `fc`, the request id and
    its output index."""
    return f"{kind}_{request_id}_{index}"


def response_object(
    request: ResponsesRequest, rid: str, model: str, created: int, status: str = "in_progress"
) -> Json:
    """The Response around an answer, echoing what the call asked as OpenAI echoes it: its
    output and usage are the caller's to fill in."""
    reasoning = request.get("reasoning")
    asked = reasoning if isinstance(reasoning, dict) else {}
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "max_tool_calls": request.get("max_tool_calls"),
        "model": model,
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": asked.get("effort"), "summary": asked.get("summary")},
        "store": False,
        "temperature": request.get("temperature"),
        "text": request.get("text") or {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p"),
        "truncation": request.get("truncation", "disabled"),
        "usage": None,
        "user": request.get("user"),
        "metadata": request.get("metadata") or {},
    }


def finished(finish_reason: str) -> tuple[str, Json | None]:
    """A Chat Completions finish reason as a Response's status and `incomplete_details`."""
    if finish_reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish_reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def responses_usage(usage: Usage) -> Json:
    """Usage in the Responses API's terms (input includes cache reads, output reasoning)."""
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def usage_of(raw: object) -> Usage | None:
    """A Response's `usage` in Chat Completions' terms; None where it sent none."""
    if not isinstance(raw, dict):
        return None
    given = _object(raw.get("input_tokens_details"))
    made = _object(raw.get("output_tokens_details"))
    return Usage(
        prompt_tokens=token_count(raw.get("input_tokens")),
        completion_tokens=token_count(raw.get("output_tokens")),
        cached_tokens=token_count(given.get("cached_tokens")),
        cache_write_tokens=token_count(given.get("cache_write_tokens")),
        reasoning_tokens=token_count(made.get("reasoning_tokens")),
    )


def event_bytes(event: Mapping[str, Any]) -> bytes:
    """One stream event as OpenAI writes it: its type as the SSE event name, then its data."""
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def failed_events(response: Json, sequence: int, code: str, message: str) -> list[Json]:
    """The two events a stream ends on when it fails, as OpenAI ends one: `error`, then
    `response.failed` with the Response as it stood (status `failed`, its `error`). OpenAI's
    streams carry the `error` event's fields in an `error` object (which the openai SDKs raise
    on); its reference documents them at the event's top level: they are in both."""
    error = {"type": "server_error", "code": code, "message": message, "param": None}
    failed = {**response, "status": "failed", "error": {"code": code, "message": message}}
    return [
        {
            "type": "error",
            "sequence_number": sequence,
            "code": code,
            "message": message,
            "param": None,
            "error": error,
        },
        {"type": "response.failed", "sequence_number": sequence + 1, "response": failed},
    ]


def error_code(status: int | str | None) -> str:
    """The Response error code for a failure's status (the codes OpenAI's Response names)."""
    return "rate_limit_exceeded" if status in (429, "429") else "server_error"


def momor_reasoning(details: list[Json]) -> str:
    """Reasoning a model other than OpenAI's sent (Chat Completions' `reasoning_details`), as
    the `encrypted_content` of its reasoning item: Momor's prefix and the entries' JSON in
    URL-safe base64. It is not encrypted: the client was sent the reasoning already."""
    return MOMOR_REASONING + base64.urlsafe_b64encode(orjson.dumps(details)).decode()


def read_momor_reasoning(content: str) -> list[Json] | None:
    """The `reasoning_details` entries Momor wrote in an `encrypted_content`; None for one
    Momor did not write (OpenAI's). Raises ValueError for one of Momor's that cannot be read."""
    if not content.startswith(MOMOR_REASONING):
        return None
    try:
        details = orjson.loads(base64.urlsafe_b64decode(content[len(MOMOR_REASONING) :]))
    except (binascii.Error, ValueError):
        raise ValueError("a reasoning item's encrypted_content is not one Momor wrote") from None
    if not isinstance(details, list) or not all(isinstance(d, dict) for d in details):
        raise ValueError("a reasoning item's encrypted_content is not one Momor wrote")
    return details


def _object(value: object) -> Json:
    return value if isinstance(value, dict) else {}
