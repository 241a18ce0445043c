"""Anthropic's stream relayed as it wrote it: `StreamRelay` (held back until it shows something,
so a try that fails before moves the call on; its reservation renewed, its marks kept, its
record handed off when it ends), but what the client is sent is each of Anthropic's events
as written (its name and data), `message_start`'s message given Momor's id. Anthropic's
translator still reads every event, for the record: usage, stop reason, what was shown.

A stream that breaks after it has shown something ends on one `error` event: Anthropic's own
(its type, its message), or Momor's for a connection that broke."""

from __future__ import annotations

import orjson

from gateway.providers.contract import ChatCompletionChunk, Event, StreamTranslator
from gateway.relay.attempts import Attempt, Call
from gateway.relay.messages.message import message_id
from gateway.relay.streaming import CLOSING, StreamRelay
from gateway.request.messages.errors import error_event
from gateway.upstream.interface import Response

MESSAGE_START = "message_start"


class NativeStream(StreamRelay):
    """One try's stream on Anthropic, its events passed through."""

    def __init__(
        self, call: Call, attempt: Attempt, response: Response, translator: StreamTranslator
    ) -> None:
        super().__init__(call, attempt, response, translator)
        self.written: list[bytes] = []
        """Anthropic's events read and not yet sent, as they are sent."""

    def _translated(self, item: bytes | Event) -> list[ChatCompletionChunk]:
        chunks = super()._translated(item)  # an error event raises here: it is not passed
        if item is not CLOSING:
            self.written.append(self._as_written(item))
        return chunks

    def _as_written(self, item: bytes | Event) -> bytes:
        event = item if isinstance(item, Event) else Event(item.decode(errors="replace"))
        data = event.data.encode()
        name = event.event
        if name == MESSAGE_START or (not name and b'"message_start"' in data):
            data = self._with_id(data)
        head = b"event: " + name.encode() + b"\n" if name else b""
        return head + b"data: " + data + b"\n\n"

    def _with_id(self, data: bytes) -> bytes:
        start = orjson.loads(data)
        message = start.get("message") if isinstance(start, dict) else None
        if not isinstance(message, dict):
            return data
        message["id"] = message_id(self.call.request_id)
        return orjson.dumps(start)

    def _emit_chunk(self, chunk: ChatCompletionChunk) -> bytes:
        super()._emit_chunk(chunk)  # counts what was shown; the client gets Anthropic's events
        return b""

    def _emitted(self, items: list[bytes | Event]) -> tuple[bytes, Exception | None]:
        _, broke = super()._emitted(items)
        sent = b"".join(self.written)
        self.written = []
        return sent, broke

    def _ending(self, error: ChatCompletionChunk | None) -> list[bytes]:
        """Nothing after Anthropic's `message_stop`; one `error` event for a stream that
        broke, of the type its status stands for (Anthropic's own error's, 529 for
        overloaded)."""
        if error is None:
            return []
        failure = error.get("error") or {"code": 502, "message": "The stream broke."}
        code = failure["code"]
        return [error_event(code if isinstance(code, int) else 502, failure["message"])]
