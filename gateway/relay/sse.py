"""Server-sent events: an incremental decoder for upstream streams and the encoder for ours."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.providers.contract import Event

DONE = b"data: [DONE]\n\n"


class Decoder:
    """Feed raw bytes as they arrive; get back every event completed so far. A line is decoded
    once whole, so a character split across reads stays whole; invalid UTF-8 becomes U+FFFD."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []

    def items(self, raw: bytes) -> list[bytes | Event]:
        """What `feed` gives, but an event of one `data:` line (nearly every one) as the bytes
        of its data, not yet decoded: a relay may send them on as they are."""
        if self._buffer or self._data or self._event or b"\r" in raw:
            return list(self.feed(raw))
        *blocks, rest = raw.split(b"\n\n")
        if _all_data_lines(raw, blocks, rest):  # the usual read: nothing but data lines
            found: list[bytes | Event] = [block[6:] for block in blocks]
            if rest:
                found += self.feed(rest)
            return found
        found = []
        for block in blocks:
            if block[:6] == b"data: " and b"\n" not in block:
                found.append(block[6:])
            elif (named := _named_event(block)) is not None:
                found.append(named)
            else:
                found += self.feed(block + b"\n\n")
        if rest:
            found += self.feed(rest)
        return found

    def feed(self, raw: bytes) -> list[Event]:
        self._buffer += raw
        events: list[Event] = []
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                return events
            line = self._buffer[:end].rstrip(b"\r").decode(errors="replace")
            self._buffer = self._buffer[end + 1 :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> Event | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = Event("\n".join(self._data), self._event)
            self._event, self._data = "", []
            return event
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def _named_event(block: bytes) -> Event | None:
    """A whole event of one `event: ` line and one `data: ` line (each of Anthropic's and of
    the Responses API's), read as `feed` reads it but at once; None for any other."""
    if block[:7] != b"event: ":
        return None
    name, found, data = block[7:].partition(b"\ndata: ")
    if not found or b"\n" in name or b"\n" in data:
        return None
    return Event(data.decode(errors="replace"), name.decode(errors="replace"))


def _all_data_lines(raw: bytes, blocks: list[bytes], rest: bytes) -> bool:
    """Whether every whole event of the read is one `data: ` line: each starts so, and the read
    has no newline but the two that end each event (and those of the part left over)."""
    if not blocks or not raw.startswith(b"data: "):
        return False
    starts = raw.count(b"\n\ndata: ") + 1 - (1 if rest.startswith(b"data: ") else 0)
    return starts == len(blocks) and raw.count(b"\n") == 2 * len(blocks) + rest.count(b"\n")


def encode(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


__all__ = ["DONE", "Decoder", "Event", "encode"]
