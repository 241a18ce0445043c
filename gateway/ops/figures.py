"""The figures read when Prometheus scrapes (or the operations page is opened), not counted per
call: the record hand-off's backlog, the journal, the records stream and the Celery queue, dead
letters, the circuit breaker and the catalog's age. Each store is asked within a bound, and a
store that cannot answer leaves its figures out rather than holding the scrape."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import DatabaseError
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from billing.models import DeadLetter
from billing.recording import hand_off as recording
from billing.recording.journal import SUFFIX
from core.breaker import REDIS, REDIS_DOWN
from core.redis_client import SyncClient, sync_client
from core.redis_keys import records_streams
from gateway.catalog.state import STATE

log = logging.getLogger(__name__)

CELERY_QUEUE = "celery"
DEAD_LETTERS_TTL = 15.0


@dataclass(slots=True)
class Figures:
    handoffs_outstanding: int
    handoff_high_water: int
    journal_bytes: int
    journal_files: int
    breaker_open: bool
    catalog_age_seconds: float | None
    stream_backlog: int | None = None
    stream_lag_seconds: float | None = None
    celery_queue: int | None = None
    dead_letters: int | None = None


def read_figures() -> Figures:
    """Every figure; blocking (Redis and the database within their bounds): call it off the
    event loop."""
    journal_files, journal_bytes = _journal()
    figures = Figures(
        handoffs_outstanding=recording.handoffs_outstanding(),
        handoff_high_water=recording.HIGH_WATER,
        journal_bytes=journal_bytes,
        journal_files=journal_files,
        breaker_open=not REDIS.closed,
        catalog_age_seconds=None
        if STATE.refreshed_at is None
        else time.time() - STATE.refreshed_at,
        dead_letters=_dead_letters(),
    )
    _redis_figures(figures)
    return figures


def _journal() -> tuple[int, int]:
    files = size = 0
    with contextlib.suppress(OSError):
        for entry in settings.MOMOR_JOURNAL_DIR.iterdir():
            if entry.name.endswith(SUFFIX):
                files += 1
                size += entry.stat().st_size
    return files, size


def _redis_figures(figures: Figures) -> None:
    if not settings.REDIS_URL or not REDIS.closed:
        return
    streams = records_streams()
    try:
        with _client(settings.REDIS_URL).pipeline(transaction=False) as pipe:
            for stream in streams:
                pipe.xlen(stream)
                pipe.xrange(stream, count=1)
            replies = pipe.execute()
        figures.celery_queue = _queued()
    except (*REDIS_DOWN, redis.RedisError) as exc:
        log.warning("metrics: Redis did not answer (%s)", type(exc).__name__)
        return
    figures.stream_backlog = sum(int(length) for length in replies[0::2])
    figures.stream_lag_seconds = max((_lag(oldest) for oldest in replies[1::2]), default=0.0)


def _queued() -> int | None:
    """Messages in the Celery queue, where the broker is a Redis (RabbitMQ keeps its own)."""
    broker = settings.CELERY_BROKER_URL or ""
    if not broker.startswith(("redis://", "rediss://", "unix://")):
        return None
    return int(_client(broker).llen(CELERY_QUEUE))


def _lag(oldest: list[tuple[bytes, object]]) -> float:
    """How long the oldest record not yet stored has waited (a stream id starts with the
    milliseconds at which it was added)."""
    if not oldest:
        return 0.0
    added_ms = int(oldest[0][0].split(b"-", 1)[0])
    return max(time.time() - added_ms / 1000, 0.0)


_clients: dict[str, SyncClient] = {}


def _client(url: str) -> SyncClient:
    client = _clients.get(url)
    if client is None:
        bound = settings.MOMOR_PROBE_TIMEOUT_SECONDS
        client = _clients[url] = sync_client(
            url, socket_timeout=bound, socket_connect_timeout=bound
        )
    return client


_dead: tuple[float, int | None] = (0.0, None)


def _dead_letters() -> int | None:
    """Parked records, read from the database at most every DEAD_LETTERS_TTL seconds."""
    global _dead
    read_at, count = _dead
    if time.monotonic() - read_at < DEAD_LETTERS_TTL:
        return count
    try:
        count = DeadLetter.objects.count()
    except DatabaseError as exc:
        log.warning("metrics: the database did not answer (%s)", type(exc).__name__)
        count = None
    _dead = (time.monotonic(), count)
    return count


def forget() -> None:
    """Read the stores afresh at the next scrape (tests)."""
    global _dead
    _dead = (0.0, None)


GAUGES = {
    "momor_handoffs_outstanding": "Record hand-offs of this process not yet durable.",
    "momor_handoff_high_water": "Outstanding hand-offs past which new calls wait.",
    "momor_journal_bytes": "Bytes of records journaled on this gateway's disk, not yet applied.",
    "momor_journal_files": "Journal files on this gateway's disk.",
    "momor_breaker_open": "1 while this process's Redis circuit breaker is open.",
    "momor_catalog_age_seconds": "Seconds since this process last refreshed its catalog.",
    "momor_records_stream_backlog": "Records in the Redis records stream not yet stored.",
    "momor_records_stream_lag_seconds": "How long the oldest record not yet stored has waited.",
    "momor_celery_queue_length": "Messages waiting in the Celery queue.",
    "momor_dead_letters": "Records parked as dead letters (admin: Billing, Dead letters).",
}


class StoreFigures(Collector):
    """The figures above as Prometheus gauges, read at each scrape; a figure a store could
    not give is left out."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        figures = read_figures()
        values: dict[str, float | None] = {
            "momor_handoffs_outstanding": figures.handoffs_outstanding,
            "momor_handoff_high_water": figures.handoff_high_water,
            "momor_journal_bytes": figures.journal_bytes,
            "momor_journal_files": figures.journal_files,
            "momor_breaker_open": int(figures.breaker_open),
            "momor_catalog_age_seconds": figures.catalog_age_seconds,
            "momor_records_stream_backlog": figures.stream_backlog,
            "momor_records_stream_lag_seconds": figures.stream_lag_seconds,
            "momor_celery_queue_length": figures.celery_queue,
            "momor_dead_letters": figures.dead_letters,
        }
        for name, value in values.items():
            if value is not None:
                labels = {"store": "redis"} if name == "momor_breaker_open" else {}
                yield _gauge(name, GAUGES[name], value, **labels)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


def _gauge(name: str, documentation: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family
