"""An Anthropic answer in Chat Completions' shape: the message, finish reasons, usage and errors.

- text blocks joined as `content` (null for a turn that only called tools);
- thinking as `reasoning`, and every thinking block as a `reasoning_details` entry holding the
  state it is replayed with: `{"type": "reasoning.text", "text": ..., "data":
  {"anthropic.signature": ...}}`, a redacted block as `{"type": "reasoning.encrypted",
  "data": {"anthropic.redacted": ...}}` (see `request.replayed_reasoning` for the way back);
- tool_use blocks as `tool_calls`, arguments as a JSON string;
- stop_reason mapped by `FINISH_REASONS`, the native one kept;
- usage: prompt is input plus cache reads plus cache writes, completion is Anthropic's output
  (reasoning included), reasoning is `output_tokens_details.thinking_tokens` where Anthropic
  reports it, else 0 (the thinking text is often a summary, so it cannot be counted from it).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway.providers.anthropic.request import REDACTED_KEY, SIGNATURE_KEY
from gateway.providers.contract import (
    ChatCompletion,
    ErrorObject,
    Failure,
    Json,
    Reply,
    Usage,
    token_count,
    tokens,
)

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
ERROR_TYPES = {
    "invalid_request_error": "invalid_request_error",
    "request_too_large": "invalid_request_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "billing_error": "permission_error",
    "not_found_error": "not_found_error",
    "rate_limit_error": "rate_limit_error",
}
# Anthropic's error types and the statuses it sends them with; an error event mid-stream
# carries no status, so it is taken from here (https://docs.claude.com/en/api/errors).
ERROR_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def finish_reason(stop_reason: object) -> str:
    return FINISH_REASONS.get(str(stop_reason), "stop") if stop_reason else "stop"


def usage_of(raw: object) -> Usage:
    """Anthropic's usage (a whole message's, or the running totals of a stream)."""
    usage = raw if isinstance(raw, dict) else {}
    details = usage.get("output_tokens_details")
    details = details if isinstance(details, dict) else {}
    read = token_count(usage.get("cache_read_input_tokens"))
    written = token_count(usage.get("cache_creation_input_tokens"))
    return Usage(
        prompt_tokens=tokens(usage.get("input_tokens"), read, written),
        completion_tokens=token_count(usage.get("output_tokens")),
        cached_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=token_count(details.get("thinking_tokens")),
    )


def thinking_detail(text: str, signature: str) -> Json:
    return {"type": "reasoning.text", "text": text, "data": {SIGNATURE_KEY: signature}}


def redacted_detail(data: str) -> Json:
    return {"type": "reasoning.encrypted", "data": {REDACTED_KEY: data}}


def tool_call(block: Json) -> Json:
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {
            "name": block.get("name"),
            "arguments": orjson.dumps(block.get("input") or {}).decode(),
        },
    }


def reply(data: bytes) -> Reply:
    answer = orjson.loads(data)
    if not isinstance(answer, dict) or not isinstance(answer.get("content"), list):
        raise ValueError("the provider's answer is not an Anthropic message")
    native = str(answer.get("stop_reason") or "")
    usage = usage_of(answer.get("usage"))
    finish = finish_reason(native)
    body: ChatCompletion = {
        "id": "",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "",
        "choices": [
            {
                "index": 0,
                "message": message(answer["content"]),
                "logprobs": None,
                "finish_reason": finish,
                "native_finish_reason": native,
            }
        ],
        "usage": usage.as_openai(),
    }
    return Reply(body, usage, finish, native)


def message(blocks: list[Any]) -> Json:
    texts: list[str] = []
    thoughts: list[str] = []
    details: list[Json] = []
    calls: list[Json] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "thinking":
            thoughts.append(str(block.get("thinking") or ""))
            details.append(thinking_detail(thoughts[-1], str(block.get("signature") or "")))
        elif kind == "redacted_thinking":
            details.append(redacted_detail(str(block.get("data") or "")))
        elif kind == "tool_use":
            calls.append(tool_call(block))
    out: Json = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if thoughts:
        out["reasoning"] = "".join(thoughts)
    if details:
        out["reasoning_details"] = details
    if calls:
        out["tool_calls"] = calls
    return out


def failure(status: int, data: bytes) -> Failure:
    """An Anthropic error body, `{"type": "error", "error": {"type", "message"}}`, as OpenAI's
    error object; anything else as a bare failure with the status."""
    try:
        parsed = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return Failure(status, f"HTTP {status}")
    return Failure(status, error["message"], openai_error(error))


def stream_failure(error: object) -> Failure:
    """An `error` event mid-stream: its status taken from its type (overloaded is 529)."""
    if not isinstance(error, dict):
        return Failure(502, "The provider reported an error mid-stream.")
    message = str(error.get("message") or "The provider reported an error mid-stream.")
    return Failure(ERROR_STATUSES.get(str(error.get("type")), 500), message, openai_error(error))


def openai_error(error: Json) -> ErrorObject:
    kind = ERROR_TYPES.get(str(error.get("type")), "server_error")
    return {"message": str(error.get("message")), "type": kind, "param": None, "code": None}
