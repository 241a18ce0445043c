"""A stream relayed as its provider wrote it, for a call made in that provider's own API (a
Messages call on Anthropic, a Responses call on OpenAI): `StreamRelay` (held back until it
shows something, so a try that fails before moves the call on; its reservation renewed, its
marks kept, its record handed off when it ends), but what the client is sent is each of the
provider's events as written (its name and data, `rewritten` where Momor puts its own ids).
The relay's translator still reads every event, for the record: usage, stop reason, what was
shown. Each API says how a stream that broke ends (`_ending`)."""

from __future__ import annotations

from gateway.providers.contract import ChatCompletionChunk, Event, StreamTranslator
from gateway.relay.attempts import Attempt, Call
from gateway.relay.streaming import CLOSING, StreamRelay, shown_chars
from gateway.upstream.interface import Response


class PassThroughStream(StreamRelay):
    """One try's stream, its events passed through."""

    def __init__(
        self, call: Call, attempt: Attempt, response: Response, translator: StreamTranslator
    ) -> None:
        super().__init__(call, attempt, response, translator)
        self.written: list[bytes] = []
        """The provider's events read and not yet sent, as they are sent."""

    def rewritten(self, name: str, data: bytes) -> bytes:
        """An event's data as the client is sent it (as written, unless an API says)."""
        return data

    def _translated(self, item: bytes | Event) -> list[ChatCompletionChunk]:
        chunks = super()._translated(item)  # an error event raises here: it is not passed
        if item is not CLOSING:
            self.written.append(self._as_written(item))
        return chunks

    def _as_written(self, item: bytes | Event) -> bytes:
        event = item if isinstance(item, Event) else Event(item.decode(errors="replace"))
        name = event.event
        data = self.rewritten(name, event.data.encode())
        head = b"event: " + name.encode() + b"\n" if name else b""
        return head + b"data: " + data + b"\n\n"

    def _emit_chunk(self, chunk: ChatCompletionChunk) -> bytes:
        """Counted (Momor's estimate where the provider reports no usage), not sent: the
        client gets the events."""
        self.delivered_chars += shown_chars(chunk)
        return b""

    def _emitted(self, items: list[bytes | Event]) -> tuple[bytes, Exception | None]:
        _, broke = super()._emitted(items)
        sent = b"".join(self.written)
        self.written = []
        return sent, broke
