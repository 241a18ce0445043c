"""A Chat Completions answer (Momor's, from any offering but Anthropic's) as Anthropic's
Messages answer: pure.

- `id`: the one Momor gives, `msg_` and the call's request id (`X-Momor-Request-Id`, by which
  `GET /v1/generation` finds its record); `model`: Momor's id of the model that answered;
- `content`: the reasoning as `thinking` blocks (a `reasoning_details` entry holding
  Anthropic's signature as its own block; any other reasoning as one block with an empty
  signature), then the text (or the refusal) as a `text` block, then each tool call as a
  `tool_use` block (its arguments parsed into `input`, `{}` where they are not a JSON object);
- `stop_reason` from the finish reason by `STOP_REASONS` (end_turn for any other);
  `stop_sequence` null (Chat Completions does not say which stop matched);
- `usage`: `input_tokens` is the prompt less its cache reads and writes, which are
  `cache_read_input_tokens` and `cache_creation_input_tokens`; `output_tokens` the completion
  (reasoning included), as Anthropic counts them."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.providers.anthropic.request import REDACTED_KEY, SIGNATURE_KEY
from gateway.providers.contract import Json, Usage

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
MESSAGE_ID_PREFIX = "msg_"


def message_id(request_id: str) -> str:
    return MESSAGE_ID_PREFIX + request_id


def stop_reason(finish: object) -> str:
    return STOP_REASONS.get(str(finish), "end_turn")


def messages_usage(usage: object) -> Json:
    """A Chat Completions usage object in Anthropic's terms."""
    read = Usage.from_openai(usage) or Usage()
    return {
        "input_tokens": max(read.prompt_tokens - read.cached_tokens - read.cache_write_tokens, 0),
        "cache_creation_input_tokens": read.cache_write_tokens,
        "cache_read_input_tokens": read.cached_tokens,
        "output_tokens": read.completion_tokens,
    }


def messages_answer(completion: Json) -> Json:
    """The Messages answer a chat completion (as Momor sends it) makes."""
    choices = completion.get("choices") or [{}]
    choice = _object(choices[0])
    message = _object(choice.get("message"))
    return {
        "id": message_id(str(completion.get("id") or "")),
        "type": "message",
        "role": "assistant",
        "model": completion.get("model"),
        "content": content_blocks(message),
        "stop_reason": stop_reason(choice.get("finish_reason")),
        "stop_sequence": None,
        "usage": messages_usage(completion.get("usage")),
    }


def messages_answer_bytes(data: bytes) -> bytes:
    return orjson.dumps(messages_answer(orjson.loads(data)))


def content_blocks(message: Json) -> list[Json]:
    blocks = thinking_blocks(message)
    text = message.get("content")
    if not isinstance(text, str) or not text:
        text = message.get("refusal")
    if isinstance(text, str) and text:
        blocks.append({"type": "text", "text": text})
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            blocks.append(tool_use(call))
    return blocks


def thinking_blocks(message: Json) -> list[Json]:
    """Anthropic's thinking blocks where `reasoning_details` hold them, else the reasoning's
    text as one block."""
    details = message.get("reasoning_details")
    blocks = [b for d in details if (b := anthropic_block(d))] if isinstance(details, list) else []
    reasoning = message.get("reasoning")
    if not blocks and isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    return blocks


def anthropic_block(detail: Any) -> Json | None:
    """The thinking block a `reasoning_details` entry holding Anthropic's state stands for."""
    data = detail.get("data") if isinstance(detail, dict) else None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get(SIGNATURE_KEY), str):
        text = str(detail.get("text") or "")
        return {"type": "thinking", "thinking": text, "signature": data[SIGNATURE_KEY]}
    if isinstance(data.get(REDACTED_KEY), str):
        return {"type": "redacted_thinking", "data": data[REDACTED_KEY]}
    return None


def tool_use(call: Json) -> Json:
    function = _object(call.get("function"))
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": tool_input(function.get("arguments")),
    }


def tool_input(arguments: object) -> Json:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _object(value: object) -> Json:
    return value if isinstance(value, dict) else {}
