"""A Responses stream relayed as the provider wrote it (`gateway.relay.native_stream`), the
Response in its lifecycle events (`response.created`... `response.completed`) given Momor's
`id` and `model`; the stream's reader (`ResponsesStream`) reads every event for the record.

A stream that fails after it has shown something (the provider's `error` or `response.failed`,
a connection that broke, a stream cut short) ends on `error` and `response.failed`, as OpenAI
ends one, numbered after the provider's last event."""

from __future__ import annotations

import orjson

from gateway.providers.contract import ChatCompletionChunk
from gateway.providers.responses.native import ResponsesStream
from gateway.providers.responses.wire import (
    LIFECYCLE,
    error_code,
    event_bytes,
    failed_events,
    response_id,
)
from gateway.relay.attempts import Attempt, Call
from gateway.relay.native_stream import PassThroughStream
from gateway.upstream.interface import Response


class NativeResponses(PassThroughStream):
    """One try's stream on a provider that speaks Responses, its events passed through."""

    def __init__(
        self, call: Call, attempt: Attempt, response: Response, reader: ResponsesStream
    ) -> None:
        super().__init__(call, attempt, response, reader)
        self.reader = reader

    def rewritten(self, name: str, data: bytes) -> bytes:
        if name and name not in LIFECYCLE:
            return data
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
