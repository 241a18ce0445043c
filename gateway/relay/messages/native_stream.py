"""Anthropic's stream relayed as it wrote it (`gateway.relay.native_stream`), `message_start`'s
message given Momor's id.

A stream that breaks after it has shown something ends on one `error` event: Anthropic's own
(its type, its message), or Momor's for a connection that broke."""

from __future__ import annotations

import orjson

from gateway.providers.contract import ChatCompletionChunk
from gateway.relay.messages.message import message_id
from gateway.relay.native_stream import PassThroughStream
from gateway.request.messages.errors import error_event

MESSAGE_START = "message_start"


class NativeStream(PassThroughStream):
    """One try's stream on Anthropic, its events passed through."""

    def rewritten(self, name: str, data: bytes) -> bytes:
        if name != MESSAGE_START and (name or b'"message_start"' not in data):
            return data
        start = orjson.loads(data)
        message = start.get("message") if isinstance(start, dict) else None
        if not isinstance(message, dict):
            return data
        message["id"] = message_id(self.call.request_id)
        return orjson.dumps(start)

    def _ending(self, error: ChatCompletionChunk | None) -> list[bytes]:
        """Nothing after Anthropic's `message_stop`; one `error` event for a stream that
        broke, of the type its status stands for (Anthropic's own error's, 529 for
        overloaded)."""
        if error is None:
            return []
        failure = error.get("error") or {"code": 502, "message": "The stream broke."}
        code = failure["code"]
        return [error_event(code if isinstance(code, int) else 502, failure["message"])]
