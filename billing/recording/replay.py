"""Applying the journal: its records go on to where they could not go when they were written.
With REDIS_URL, to Redis once it answers again (settled and appended to the records stream,
as at the end of a call); while it does not, the records whose reservation this process holds
itself are stored in the database directly, so the ledger keeps up with calls served on the
fallbacks. In embedded mode, every record is stored from here: by the gateway's storing process
(billing.recording.storer_link), or on this thread. A stream's intents are sorted out
first (billing.recording.journal_intents): a process that died mid-stream is billed from its latest.
Storing is idempotent on the request id, so a record applied twice (its process died after
applying, before compacting) is stored once. Runs on a thread of each gateway process: on
start (the segments of a process that died), shortly after each record is journaled, and
every second while anything is left.

Records that wait for Redis hold back none after them: only the database failing ends a pass.
What the journal keeps is held against its organization's credit in this process's own store
until the ledger has it, so calls admitted there while Redis is down count it: the whole
journal on start (before the first call: what a process that died left), then what each pass
leaves."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import orjson
from django.conf import settings
from django.db import close_old_connections

from billing.admission.operations import Settlement, hold, in_redis, settle_many
from billing.calls.records import record_from_payload
from billing.recording.journal import Journal
from billing.recording.journal_intents import sorted_out
from billing.recording.settlement import not_posted_again, settlement_of
from billing.recording.storer_link import STORER, StorerUnavailable
from billing.storing.dead_letters import TRANSIENT
from billing.storing.store import announce, records_store
from core.breaker import REDIS, REDIS_DOWN

log = logging.getLogger(__name__)

# The records journaled while it waits this long come along in the same batch: each batch is a
# pass of this thread on the serving process and a transaction of the storing process.
LINGER = 0.25
RETRY_SECONDS = 1.0


class Replayer:
    def __init__(self) -> None:
        self._wake = threading.Event()
        self._replaying = threading.Lock()
        self._thread: threading.Thread | None = None
        self._held: list[bytes] = []
        """Records the journal could not take (a disk that failed): applied first."""

    def start(self) -> None:
        """The replay thread; its first pass (what a process that died left) runs at once,
        once the journal's charges are held."""
        if self._thread is None:
            self.hold_journaled()
        if self._thread is None or not self._thread.is_alive():
            start_storer()
            self._thread = threading.Thread(target=self._run, name="momor-replay", daemon=True)
            self._wake.set()
            self._thread.start()

    def nudge(self) -> None:
        """A record was journaled: apply it soon."""
        self._wake.set()

    def hold(self, payload: bytes) -> None:
        self._held.append(payload)

    def hold_journaled(self) -> None:
        """Hold the charge of every record the journal holds (a dead process's adopted)."""
        with self._replaying:
            current = journal()
            segments = [current.entries(path) for path in current.ready()]
            for lines in sorted_out(segments):
                _hold(lines.apply)

    def replay(self) -> bool:
        """Apply what is held and every segment that is ready; True when nothing is left."""
        with self._replaying:
            rest = self._apply_held()
            if rest.failed:
                return False
            left = bool(rest)
            current = journal()
            current.rotate()
            ready = current.ready()
            segments = [current.entries(path) for path in ready]
            for path, entries, lines in zip(ready, segments, sorted_out(segments), strict=True):
                rest = apply(lines.apply)
                kept = rest.payloads + lines.keep  # an intent kept: its stream runs here
                if not kept:
                    current.discard(path)
                elif len(kept) < len(entries):
                    current.replace(path, kept)
                if rest.failed:
                    return False
                left = left or bool(rest)
            return not left

    def _apply_held(self) -> Rest:
        if not self._held:
            return Rest()
        held, self._held = self._held, []
        try:
            rest = apply(held)
        except Exception:
            self._held[:0] = held
            raise
        self._held[:0] = rest.payloads
        return rest

    def _run(self) -> None:
        left = True
        while True:
            woken = self._wake.wait(RETRY_SECONDS if left else None)
            if woken:
                time.sleep(LINGER)
                self._wake.clear()
            try:
                left = not self.replay()
            except Exception:
                log.exception("could not apply the journal; trying again")
                left = True


@dataclass(frozen=True, slots=True)
class Rest:
    """What no store took: records that wait for Redis (which holds their reservations), and
    those the database did not take (it is down)."""

    waiting: list[bytes] = field(default_factory=list)
    failed: list[bytes] = field(default_factory=list)

    @property
    def payloads(self) -> list[bytes]:
        return self.waiting + self.failed

    def __bool__(self) -> bool:
        return bool(self.waiting or self.failed)


def apply(payloads: list[bytes]) -> Rest:
    """Send on what a store takes now; returns the rest, its charges held."""
    rest = _send(payloads)
    _hold(rest.payloads)
    return rest


def _send(payloads: list[bytes]) -> Rest:
    if not payloads:
        return Rest()
    if not settings.REDIS_URL:
        return Rest(failed=_store_directly(payloads))
    decoded = [(payload, _settlement(payload)) for payload in payloads]
    unreadable = [payload for payload, settlement in decoded if settlement is None]
    readable = [settlement for _, settlement in decoded if settlement is not None]
    if REDIS.allow() and _to_redis(readable):
        return Rest(failed=_store_directly(unreadable))
    # Redis unreachable: a call whose reservation Redis holds (or may hold) waits for Redis to
    # settle it; the others are stored now
    waiting = [s.payload for s in readable if _held_by_redis(s)]
    now = unreadable + [s.payload for s in readable if not _held_by_redis(s)]
    return Rest(waiting, _store_directly(now))


def _hold(payloads: list[bytes]) -> None:
    """Held in this process's own store until the ledger has them (announced when stored, or
    found there by the refresher's reconciliation)."""
    now_ms = int(time.time() * 1000)
    for settlement in filter(None, map(_settlement, payloads)):
        hold(settlement, now_ms)


def _held_by_redis(settlement: Settlement) -> bool:
    ticket = settlement.ticket
    return ticket is not None and (ticket.shared or ticket.in_doubt)


def _settlement(payload: bytes) -> Settlement | None:
    """None for a payload that does not decode: it goes straight to the dead letters."""
    try:
        record = record_from_payload(orjson.loads(payload))
    except Exception:
        return None
    return settlement_of(record, payload)


def _to_redis(settlements: list[Settlement]) -> bool:
    if not in_redis():
        return False
    try:
        settle_many(not_posted_again(settlements), int(time.time() * 1000))
    except REDIS_DOWN:
        REDIS.failed()
        return False
    REDIS.succeeded()
    return True


def _store_directly(payloads: list[bytes]) -> list[bytes]:
    if not payloads:
        return []
    try:
        if _in_storing_process():
            announce(STORER.commit(payloads))
        else:
            close_old_connections()
            records_store(payloads)
    except (*TRANSIENT, StorerUnavailable) as exc:
        log.warning("records not stored (%s); the journal keeps them", exc)
        return payloads
    return []


def _in_storing_process() -> bool:
    """Embedded mode stores in a process of its own (MOMOR_JOURNAL_STORER=process); with Redis,
    the journal only stores what Redis cannot take, in this process."""
    return not settings.REDIS_URL and settings.MOMOR_JOURNAL_STORER == "process"


def start_storer() -> None:
    if _in_storing_process():
        STORER.start()


def stop_storer() -> None:
    STORER.stop()


@cache
def journal_at(directory: str) -> Journal:
    return Journal(Path(directory))


def journal() -> Journal:
    """This process's journal, in MOMOR_JOURNAL_DIR."""
    return journal_at(str(settings.MOMOR_JOURNAL_DIR))


REPLAYER = Replayer()
