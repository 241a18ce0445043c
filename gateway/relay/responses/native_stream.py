"""A Responses stream relayed as the provider wrote it: `StreamRelay` (held back until it shows
something, so a try that fails before moves the call on; its reservation renewed, its marks
kept, its record handed off when it ends), but what the client is sent is each of the
provider's events as written (its name and data), the Response in its lifecycle events
(`response.created`... `response.completed`) given Momor's `id` and `model`. The stream's
reader (`ResponsesStream`) still reads every event, for the record: usage, status, what was
shown.

A stream that fails after it has shown something (the provider's `error` or `response.failed`,
a connection that broke, a stream cut short) ends on `error` and `response.failed`, as OpenAI
ends one, numbered after the provider's last event."""

from __future__ import annotations

import orjson

from gateway.providers.contract import ChatCompletionChunk, Event
from gateway.providers.responses.native import ResponsesStream
from gateway.providers.responses.wire import (
    LIFECYCLE,
    error_code,
    event_bytes,
    failed_events,
    response_id,
)
from gateway.relay.attempts import Attempt, Call
from gateway.relay.streaming import CLOSING, StreamRelay
from gateway.upstream.interface import Response


class NativeResponses(StreamRelay):
    """One try's stream on a provider that speaks Responses, its events passed through."""

    def __init__(
        self, call: Call, attempt: Attempt, response: Response, reader: ResponsesStream
    ) -> None:
        super().__init__(call, attempt, response, reader)
        self.reader = reader
        self.written: list[bytes] = []
        """The provider's events read and not yet sent, as they are sent."""

    def _translated(self, item: bytes | Event) -> list[ChatCompletionChunk]:
        chunks = super()._translated(item)  # an error event raises here: it is not passed
        if item is not CLOSING:
            self.written.append(self._as_written(item))
        return chunks

    def _as_written(self, item: bytes | Event) -> bytes:
        event = item if isinstance(item, Event) else Event(item.decode(errors="replace"))
        data, name = event.data.encode(), event.event
        if name in LIFECYCLE or not name:
            data = self._with_ids(data)
        head = b"event: " + name.encode() + b"\n" if name else b""
        return head + b"data: " + data + b"\n\n"

    def _with_ids(self, data: bytes) -> bytes:
        event = orjson.loads(data)
        response = event.get("response") if isinstance(event, dict) else None
        if not isinstance(response, dict):
            return data
        response.update(self._ids())
        return orjson.dumps(event)

    def _ids(self) -> dict[str, str]:
        return {
            "id": response_id(self.call.request_id),
            "model": self.attempt.candidate.offering.model_id,
        }

    def _emit_chunk(self, chunk: ChatCompletionChunk) -> bytes:
        super()._emit_chunk(chunk)  # counts what was shown; the client gets the events
        return b""

    def _emitted(self, items: list[bytes | Event]) -> tuple[bytes, Exception | None]:
        _, broke = super()._emitted(items)
        sent = b"".join(self.written)
        self.written = []
        return sent, broke

    def _ending(self, error: ChatCompletionChunk | None) -> list[bytes]:
        """Nothing after the provider's `response.completed`; `error` and `response.failed`
        for a stream that broke."""
        if error is None:
            return []
        failure = error.get("error") or {"code": 502, "message": "The stream broke."}
        response = {**self.reader.response, **self._ids()}
        code = error_code(failure["code"])
        events = failed_events(response, self.reader.sequence + 1, code, failure["message"])
        return [b"".join(map(event_bytes, events))]
