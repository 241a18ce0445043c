"""Anthropic's streamed events as Chat Completions chunks.

Anthropic streams `message_start`, then per content block `content_block_start`, its
`content_block_delta`s and `content_block_stop`, then `message_delta` (stop reason and final
usage) and `message_stop`, with `ping`s anywhere and an `error` event when it fails
(https://docs.claude.com/en/docs/build-with-claude/streaming). They become:

- `message_start`: the first chunk, naming the assistant (`{"role": "assistant", "content":
  ""}`);
- text deltas as `delta.content`; thinking deltas as `delta.reasoning`, and once a thinking
  block ends one `delta.reasoning_details` entry with its whole text and signature (a redacted
  block gives its entry at once);
- a tool_use block as OpenAI's indexed tool-call deltas: the first with id, type, name and
  empty arguments, then the argument fragments;
- `message_delta`: the last choice chunk, with `finish_reason`;
- `message_stop`: the usage chunk (`choices` empty), and the stream is finished;
- `error`: `StreamFailed`, with the status its type is sent with (overloaded is 529).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import orjson

from gateway.providers.anthropic.response import (
    finish_reason,
    redacted_detail,
    stream_failure,
    thinking_detail,
    tool_call,
    usage_of,
)
from gateway.providers.contract import (
    ChatCompletionChunk,
    Event,
    Json,
    StreamFailed,
    StreamTranslator,
    envelope,
)

Chunks = list[ChatCompletionChunk]


@dataclass
class Block:
    """A content block being streamed: its kind, thinking so far, signature, tool index."""

    kind: str
    thinking: list[str] = field(default_factory=list)
    signature: str = ""
    tool_index: int = -1


class AnthropicStream(StreamTranslator):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: dict[int, Block] = {}
        self.tools = 0
        self.usage: Json = {}

    def feed(self, event: Event) -> Chunks:
        data = orjson.loads(event.data)
        if not isinstance(data, dict):
            return []
        kind = data.get("type")
        if kind == "error":
            raise StreamFailed(stream_failure(data.get("error")))
        handler = self._handlers.get(str(kind))
        return handler(self, data) if handler else []

    def _message_start(self, data: Json) -> Chunks:
        message = data.get("message") or {}
        self.usage.update(message.get("usage") or {})
        return [chunk({"role": "assistant", "content": ""})]

    def _block_start(self, data: Json) -> Chunks:
        block = data.get("content_block") or {}
        kind = str(block.get("type"))
        state = self.blocks[int(data.get("index") or 0)] = Block(kind)
        if kind == "text" and block.get("text"):
            return [chunk({"content": block["text"]})]
        if kind == "redacted_thinking":
            return [chunk({"reasoning_details": [redacted_detail(str(block.get("data")))]})]
        if kind == "tool_use":
            state.tool_index, self.tools = self.tools, self.tools + 1
            call = {"index": state.tool_index, **tool_call({**block, "input": {}})}
            call["function"]["arguments"] = ""
            return [chunk({"tool_calls": [call]})]
        return []

    def _block_delta(self, data: Json) -> Chunks:
        state = self.blocks.get(int(data.get("index") or 0))
        delta = data.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [chunk({"content": delta["text"]})]
        if kind == "thinking_delta" and state is not None:
            state.thinking.append(str(delta.get("thinking") or ""))
            return [chunk({"reasoning": state.thinking[-1]})] if state.thinking[-1] else []
        if kind == "signature_delta" and state is not None:
            state.signature += str(delta.get("signature") or "")
        if kind == "input_json_delta" and state is not None and delta.get("partial_json"):
            call = {"index": state.tool_index, "function": {"arguments": delta["partial_json"]}}
            return [chunk({"tool_calls": [call]})]
        return []

    def _block_stop(self, data: Json) -> Chunks:
        state = self.blocks.pop(int(data.get("index") or 0), None)
        if state is None or state.kind != "thinking":
            return []
        detail = thinking_detail("".join(state.thinking), state.signature)
        return [chunk({"reasoning_details": [detail]})]

    def _message_delta(self, data: Json) -> Chunks:
        self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        native = (data.get("delta") or {}).get("stop_reason")
        if not native:
            return []
        self.state.native_finish_reason = str(native)
        self.state.finish_reason = finish_reason(native)
        return [chunk({}, self.state.finish_reason)]

    def _message_stop(self, data: Json) -> Chunks:
        usage = self.state.usage = usage_of(self.usage)
        self.state.finished = True
        return [{**envelope([]), "usage": usage.as_openai()}]

    _handlers: ClassVar[dict[str, Callable[[AnthropicStream, Json], Chunks]]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
    }


def chunk(delta: Json, finish: str | None = None) -> ChatCompletionChunk:
    return envelope([{"index": 0, "delta": delta, "finish_reason": finish}])
