"""The one hand-off from the gateway: `record_call` queues a finished call's record and returns
at once. A background thread of the gateway process settles the call's reservation, then hands
the record to Celery when a broker is configured, or stores it itself otherwise. If the broker
cannot be reached, the thread stores the record directly: a call's record is never lost to a
broker outage, and storing is idempotent on the request id, so a record that reaches both
paths is stored once."""

from __future__ import annotations

import logging
import queue
import threading
import time
from functools import cache

from django.conf import settings
from django.db import close_old_connections
from kombu import Connection
from kombu.pools import producers

from billing.admission import store
from billing.cost import to_units
from billing.generations import generation_record, served_cost
from billing.records import CallRecord, record_payload

log = logging.getLogger(__name__)

_queue: queue.SimpleQueue[CallRecord] = queue.SimpleQueue()
_writer: threading.Thread | None = None
_writer_lock = threading.Lock()
_idle = threading.Condition()
_pending = 0


def record_call(record: CallRecord) -> None:
    """Hand a finished call to billing; never blocks on the database or the broker."""
    global _pending
    _ensure_writer()
    with _idle:
        _pending += 1
    _queue.put(record)


def drain(timeout: float = 10.0) -> bool:
    """Wait until every handed-off record is settled and handed on; False if that took too long."""
    with _idle:
        return _idle.wait_for(lambda: _pending == 0, timeout=timeout)


def _ensure_writer() -> None:
    global _writer
    if _writer is not None and _writer.is_alive():
        return
    with _writer_lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_write_forever, name="momor-recorder", daemon=True)
            _writer.start()


def _write_forever() -> None:
    global _pending
    while True:
        record = _queue.get()
        try:
            _handle(record)
        except Exception:
            log.exception("could not record call %s", record.request_id)
        finally:
            with _idle:
                _pending -= 1
                _idle.notify_all()


def _handle(record: CallRecord) -> None:
    _settle(record)
    if settings.CELERY_BROKER_URL and _enqueue(record):
        return
    close_old_connections()
    generation_record(record)


def _settle(record: CallRecord) -> None:
    if record.ticket is None:
        return
    cost = to_units(served_cost(record))
    try:
        store().settle(record.ticket, cost, record.request_id, int(time.time() * 1000))
    except Exception:  # the reservation expires on its own; the ledger still gets the charge
        log.warning("could not settle the reservation of %s", record.request_id)


def _enqueue(record: CallRecord) -> bool:
    from billing.tasks import record_generation

    try:
        with producers[_broker(settings.CELERY_BROKER_URL)].acquire(timeout=2) as producer:
            record_generation.apply_async(
                args=[record_payload(record)],
                task_id=f"record-{record.request_id}",
                producer=producer,
                retry=True,
                retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
            )
    except Exception:
        log.warning("broker unreachable; storing %s directly", record.request_id)
        return False
    return True


@cache
def _broker(url: str) -> Connection:
    """The broker the setting names now: Celery's own pool keeps the URL it first read, so a
    record would go to a broker other than the one `CELERY_BROKER_URL` says."""
    from billing.tasks import record_generation

    connection: Connection = record_generation.app.connection_for_write(url)
    return connection
