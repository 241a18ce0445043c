"""A stream's durable trace. From the moment its provider starts answering, the record its call
would have if its process stopped now (its intent: what was delivered so far, billed as the
provider's usage or Momor's estimate) is held where a process that outlives this one finds it: with
the call's reservation in Redis (billing.admission.intents) when Redis holds it, else in the journal
(billing.recording.journal_intents). The first mark is durable before the content it covers is sent;
later ones are brought up to date every PROGRESS_SECONDS at most, without waiting, so no chunk waits
on a store."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings

from billing.admission.operations import Intent, in_redis, mark
from billing.calls.records import CallRecord, record_payload
from billing.recording import journal_intents
from billing.recording.replay import journal
from billing.recording.settlement import cost_units
from core.breaker import REDIS

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 1.0


class ProgressMarks:
    """One stream's marks; each is made by an `intent`, the record its call would have if its
    process stopped now (passed at each mark, so the marks hold no reference back to their
    stream). A mark that cannot be made is left out: the stream goes on, recorded as it ends."""

    def __init__(self) -> None:
        self.due = 0.0
        self.journaled: asyncio.Future[None] | None = None
        """The last mark handed to the journal, if any was."""

    async def first(self, intent: Callable[[], CallRecord]) -> None:
        """The first mark, once durable (Redis's time-out, then the journal's, at most)."""
        marked = self._marked(intent)
        timeout = settings.MOMOR_REDIS_TIMEOUT_SECONDS + settings.MOMOR_JOURNAL_TIMEOUT_SECONDS
        try:
            await asyncio.wait_for(asyncio.shield(marked), timeout)
        except TimeoutError:
            log.warning("a stream's first mark is not durable yet")

    def mark_if_due(self, intent: Callable[[], CallRecord]) -> None:
        """Bring the mark up to date, at most every PROGRESS_SECONDS, without waiting for it."""
        if time.monotonic() >= self.due:
            self._marked(intent)

    async def ended(self, request_id: str) -> None:
        """The call's record is handed off: its journaled intents, once on disk, are done with."""
        if self.journaled is not None:
            await asyncio.wait([self.journaled], timeout=settings.MOMOR_JOURNAL_TIMEOUT_SECONDS)
            journal_intents.ended(request_id)

    def _marked(self, intent_of: Callable[[], CallRecord]) -> asyncio.Future[None]:
        self.due = time.monotonic() + PROGRESS_SECONDS
        try:
            intent = intent_of()
            payload = record_payload(intent)
        except Exception:
            log.exception("could not make a stream's mark")
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return self._held(intent, payload)

    def _held(self, intent: CallRecord, payload: bytes) -> asyncio.Future[None]:
        ticket = intent.ticket
        if ticket is None or not ticket.shared or not in_redis():
            return self._to_journal(intent.request_id, payload)
        if not REDIS.allow():
            return self._to_journal(intent.request_id, payload)
        held = Intent(intent.organization_id, ticket.id, ticket.held_on, intent.request_id,
                      cost_units(intent), payload)  # fmt: skip
        ttl_ms = settings.MOMOR_RESERVATION_TTL_SECONDS * 1000
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        mark(held, ttl_ms).add_done_callback(partial(self._in_redis, done, held))
        return done

    def _in_redis(
        self, done: asyncio.Future[None], held: Intent, sent: asyncio.Future[Any]
    ) -> None:
        failure = "cancelled" if sent.cancelled() else sent.exception()
        if failure is None:
            done.set_result(None)
            return
        log.warning("Redis could not take the mark of call %s (%s): journaling it",
                    held.request_id, failure)  # fmt: skip
        journaled = self._to_journal(held.request_id, held.payload)
        journaled.add_done_callback(lambda _: done.set_result(None))

    def _to_journal(self, request_id: str, payload: bytes) -> asyncio.Future[None]:
        journal_intents.opened(request_id)
        written = asyncio.wrap_future(journal().append(journal_intents.intent_line(payload)))
        written.add_done_callback(_logged)
        self.journaled = written
        return written


def _logged(written: asyncio.Future[None]) -> None:
    if not written.cancelled() and (failure := written.exception()) is not None:
        log.error("the journal could not take a stream's mark (%s)", failure)
