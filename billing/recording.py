"""The one hand-off from the gateway: `record_call` queues a finished call's record and returns
at once. A background thread of the gateway process takes the records waiting, settles their
reservations in one round trip, then hands them to Celery in one message when a broker is
configured, or stores them itself otherwise. If the broker
cannot be reached, the thread stores the record directly: a call's record is never lost to a
broker outage, and storing is idempotent on the request id, so a record that reaches both
paths is stored once."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from functools import cache

from django.conf import settings
from django.db import close_old_connections
from kombu import Connection
from kombu.pools import producers

from billing.admission import store
from billing.admission.select import local_store
from billing.cost import to_units
from billing.generations import generation_record, served_cost
from billing.records import CallRecord

log = logging.getLogger(__name__)

BATCH = 200
HIGH_WATER = 2_000
LINGER = 0.02

# Records wait here for the writer, which wakes once for all that come within LINGER of the
# first: a call only appends (no wake-up of another thread, no GIL hand-over per call).
_pending: list[CallRecord] = []
_lock = threading.Lock()
_wake = threading.Event()
_writer: threading.Thread | None = None
_handed = 0
_done = 0
_idle = threading.Condition()


def record_call(record: CallRecord) -> None:
    """Hand a finished call to billing; never blocks on the database or the broker."""
    global _handed
    _ensure_writer()
    with _lock:
        _handed += 1
        _pending.append(record)
        if len(_pending) == 1:
            _wake.set()


async def make_room() -> None:
    """While the writer is far behind (a gateway saturated beyond what it can record), new calls
    wait for it: memory stays bounded and no record is ever dropped."""
    while _handed - _done > HIGH_WATER:
        await asyncio.sleep(0.005)


def drain(timeout: float = 10.0) -> bool:
    """Wait until every handed-off record is settled and handed on; False if that took too long."""
    with _idle:
        return _idle.wait_for(lambda: _done >= _handed, timeout=timeout)


def _ensure_writer() -> None:
    global _writer
    if _writer is not None and _writer.is_alive():
        return
    with _lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_write_forever, name="momor-recorder", daemon=True)
            _writer.start()


def _write_forever() -> None:
    while True:
        for batch in _next_batches():
            _write(batch)


def _next_batches() -> list[list[CallRecord]]:
    """Everything that came within LINGER of the first waiting record, BATCH at a time (one
    broker message each)."""
    global _pending
    _wake.wait()
    time.sleep(LINGER)
    with _lock:
        taken, _pending = _pending, []
        _wake.clear()
    return [taken[i : i + BATCH] for i in range(0, len(taken), BATCH)]


def _write(batch: list[CallRecord]) -> None:
    global _done
    try:
        _handle(batch)
    except Exception:
        log.exception("could not record %d calls", len(batch))
    finally:
        with _idle:
            _done += len(batch)
            _idle.notify_all()


def _handle(batch: list[CallRecord]) -> None:
    _settle(batch)
    if settings.CELERY_BROKER_URL and _enqueue(batch):
        return
    close_old_connections()
    for record in batch:
        try:
            generation_record(record)
        except Exception:
            log.exception("could not record call %s", record.request_id)


def _settle(batch: list[CallRecord]) -> None:
    """Settle each reservation in the store that issued it (this process's own while Redis
    was unreachable)."""
    now_ms = int(time.time() * 1000)
    for shared in (True, False):
        settled = [
            (record.ticket, to_units(served_cost(record)), record.request_id)
            for record in batch
            if record.ticket is not None and record.ticket.shared is shared
        ]
        if not settled:
            continue
        try:
            (store() if shared else local_store()).settle_many(settled, now_ms)
        except Exception:  # reservations expire on their own; the ledger still gets charged
            log.warning("could not settle the reservations of %d calls", len(settled))


def _enqueue(batch: list[CallRecord]) -> bool:
    from billing.tasks import record_generations

    try:
        with producers[_broker(settings.CELERY_BROKER_URL)].acquire(timeout=2) as producer:
            record_generations.apply_async(
                args=[batch],
                serializer="orjson",
                producer=producer,
                retry=True,
                retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
            )
    except Exception:
        log.warning("broker unreachable; storing %d calls directly", len(batch))
        return False
    return True


@cache
def _broker(url: str) -> Connection:
    """The broker the setting names now: Celery's own pool keeps the URL it first read, so a
    record would go to a broker other than the one `CELERY_BROKER_URL` says."""
    from billing.tasks import record_generations

    connection: Connection = record_generations.app.connection_for_write(url)
    return connection
