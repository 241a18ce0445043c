"""A Chat Completions stream (Momor's, from any offering but Anthropic's) as Anthropic's
Messages events, each an SSE event named for its type
(https://docs.claude.com/en/docs/build-with-claude/streaming):

- the first chunk: `message_start` (the message with no content, `id` `msg_` and the call's
  request id, `model` Momor's id, usage zero until the end), then a `ping`;
- `delta.reasoning`: a `thinking` block (`content_block_start` with empty thinking and
  signature) and its `thinking_delta`s; `delta.content` (or `delta.refusal`): a `text` block
  and its `text_delta`s; each tool call (a new `index` of `delta.tool_calls`): a `tool_use`
  block with its id and name and empty `input`, then its argument fragments as
  `input_json_delta`s. A block is stopped (`content_block_stop`) when the next one starts or
  the answer ends;
- `[DONE]`: `message_delta` with the stop reason (`message.STOP_REASONS` of the finish
  reason) and the usage in Anthropic's terms (`message.messages_usage` of the usage chunk),
  then `message_stop`;
- an error chunk (the stream broke after it showed something): one `error` event of the
  type its code stands for (`gateway.request.messages.errors`), and the stream ends.

`MessagesEvents` is the translation, pure; `MessagesStream` runs it over the relay's stream
and closes that stream when it is closed (the relay hands the call's record off then)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.providers.contract import Json
from gateway.relay.messages.message import message_id, messages_usage, stop_reason
from gateway.relay.sse import Decoder
from gateway.request.messages.errors import error_event

DONE = b"[DONE]"
NO_USAGE = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
}


def event(kind: str, data: Json) -> bytes:
    """One SSE event as Anthropic writes them: named for its type, which its data repeats."""
    body = orjson.dumps({"type": kind, **data})
    return b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n"


class MessagesEvents:
    """One stream's translation: `feed` each chunk, `done` at `[DONE]`."""

    def __init__(self) -> None:
        self.started = False
        self.kind = ""
        """The kind of the block open (text, thinking, tool_use), "" for none."""
        self.blocks = 0
        self.tools: dict[int, int] = {}
        """Each tool call's block index, by its index among the chunks' tool calls."""
        self.stop = "end_turn"
        self.usage: Json = {"output_tokens": 0}

    def feed(self, chunk: Json) -> list[bytes]:
        out = [] if self.started else self._start(chunk)
        error = chunk.get("error")
        if isinstance(error, dict):
            return [*out, *self._error(error)]
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict):
                out += self._delta(choice.get("delta") or {})
                if choice.get("finish_reason"):
                    self.stop = stop_reason(choice["finish_reason"])
        if isinstance(chunk.get("usage"), dict):
            self.usage = messages_usage(chunk["usage"])
        return out

    def done(self) -> list[bytes]:
        out = self._close()
        delta = {"stop_reason": self.stop, "stop_sequence": None}
        out.append(event("message_delta", {"delta": delta, "usage": self.usage}))
        out.append(event("message_stop", {}))
        return out

    def _start(self, chunk: Json) -> list[bytes]:
        self.started = True
        message: Json = {
            "id": message_id(str(chunk.get("id") or "")),
            "type": "message",
            "role": "assistant",
            "model": chunk.get("model"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": NO_USAGE,
        }
        return [event("message_start", {"message": message}), event("ping", {})]

    def _error(self, error: Json) -> list[bytes]:
        code = error.get("code")
        status = code if isinstance(code, int) and not isinstance(code, bool) else 500
        return [error_event(status, str(error.get("message") or "The stream broke."))]

    def _delta(self, delta: Json) -> list[bytes]:
        out: list[bytes] = []
        thought = delta.get("reasoning") or delta.get("reasoning_content")
        if isinstance(thought, str) and thought:
            out += self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out.append(self._block_delta({"type": "thinking_delta", "thinking": thought}))
        text = delta.get("content") or delta.get("refusal")
        if isinstance(text, str) and text:
            out += self._open("text", {"type": "text", "text": ""})
            out.append(self._block_delta({"type": "text_delta", "text": text}))
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                out += self._tool_call(call)
        return out

    def _tool_call(self, call: Json) -> list[bytes]:
        out: list[bytes] = []
        given = call.get("index")
        index = given if isinstance(given, int) else len(self.tools)
        function = _object(call.get("function"))
        if index not in self.tools:
            block = {"type": "tool_use", "id": call.get("id"), "name": function.get("name")}
            out += self._open("tool_use", {**block, "input": {}}, force=True)
            self.tools[index] = self.blocks - 1
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            delta = {"type": "input_json_delta", "partial_json": arguments}
            out.append(self._block_delta(delta, self.tools[index]))
        return out

    def _open(self, kind: str, block: Json, *, force: bool = False) -> list[bytes]:
        """The block of `kind` open: the one open if it is of that kind (unless `force`),
        else a new one after stopping it."""
        if self.kind == kind and not force:
            return []
        out = self._close()
        self.kind, self.blocks = kind, self.blocks + 1
        out.append(event("content_block_start", {"index": self.blocks - 1, "content_block": block}))
        return out

    def _close(self) -> list[bytes]:
        if not self.kind:
            return []
        self.kind = ""
        return [event("content_block_stop", {"index": self.blocks - 1})]

    def _block_delta(self, delta: Json, index: int | None = None) -> bytes:
        at = self.blocks - 1 if index is None else index
        return event("content_block_delta", {"index": at, "delta": delta})


class MessagesStream:
    """The relay's Chat Completions stream read as Messages events; closing it closes the
    relay's stream, which hands the call's record off (started or not)."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks
        self.events = MessagesEvents()
        self.decoder = Decoder()

    def __aiter__(self) -> MessagesStream:
        return self

    async def __anext__(self) -> bytes:
        while True:
            out = self.translated(await anext(self.chunks))
            if out:
                return out

    def translated(self, raw: bytes) -> bytes:
        out: list[bytes] = []
        for item in self.decoder.items(raw):
            data = item if isinstance(item, bytes) else item.data.encode()
            if data == DONE:
                out += self.events.done()
            else:
                out += self.events.feed(_object(orjson.loads(data)))
        return b"".join(out)

    async def aclose(self) -> None:
        close: Any = getattr(self.chunks, "aclose", None)
        if close is not None:
            await close()


def _object(value: object) -> Json:
    return value if isinstance(value, dict) else {}
