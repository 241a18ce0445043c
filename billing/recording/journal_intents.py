"""Stream intents in the journal (billing.recording.progress): one line `{"intent":<record>}` each,
the record a stream's call would have if its process stopped then. The replay sorts them out before
it applies a segment:

- the call's stream still runs in this process: its latest intent is kept on disk;
- it ended here, or its record is among the segments to apply: its intents are dropped (the
  call's own record is its one record);
- it belongs to a process that died without recording it: its latest intent is applied as the
  call's record, the others dropped.

A stream ends here only once every intent it journaled is on disk, so an intent of a call this
process ended is always in a segment the replay reads."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import orjson

PREFIX = b'{"intent":'

_lock = threading.Lock()
_open: set[str] = set()
_ended: set[str] = set()


def intent_line(payload: bytes) -> bytes:
    return PREFIX + payload + b"}"


def opened(request_id: str) -> None:
    with _lock:
        _open.add(request_id)


def ended(request_id: str) -> None:
    """The call's record is handed off and each of its intents on disk."""
    with _lock:
        _open.discard(request_id)
        _ended.add(request_id)


@dataclass(slots=True)
class Sorted:
    """A segment's lines: those to apply (intents unwrapped), and the intents it keeps."""

    apply: list[bytes]
    keep: list[bytes]


def sorted_out(segments: list[list[bytes]]) -> list[Sorted]:
    """Each segment's lines sorted out, the segments read oldest first."""
    finals: set[str] = set()
    latest: dict[str, tuple[int, int]] = {}
    for at, entries in enumerate(segments):
        for index, entry in enumerate(entries):
            if entry.startswith(PREFIX):
                latest[_request_id(entry[len(PREFIX) : -1])] = (at, index)
            else:
                finals.add(_request_id(entry))
    with _lock:
        running, ended = set(_open), set(_ended)
        _ended.intersection_update(latest)  # those with no intent left are done with
    return [
        _sorted(at, entries, latest, finals | ended, running) for at, entries in enumerate(segments)
    ]


def _sorted(
    at: int,
    entries: list[bytes],
    latest: dict[str, tuple[int, int]],
    recorded: set[str],
    running: set[str],
) -> Sorted:
    out = Sorted([], [])
    for index, entry in enumerate(entries):
        if not entry.startswith(PREFIX):
            out.apply.append(entry)
            continue
        payload = entry[len(PREFIX) : -1]
        request_id = _request_id(payload)
        if request_id in recorded or latest[request_id] != (at, index):
            continue
        if request_id in running:
            out.keep.append(entry)
        else:
            out.apply.append(payload)
    return out


def _request_id(payload: bytes) -> str:
    """The line's request id ('' for a line that does not decode: it is applied as it is, and
    parked)."""
    try:
        found = orjson.loads(payload).get("request_id")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    return found if isinstance(found, str) else ""
