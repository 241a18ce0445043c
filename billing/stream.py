"""The consumer of the records stream: the records the settle script appends to a Redis stream
are stored in the database here. Consumers share one group, so each record goes to one of
them; a record is acknowledged (and deleted from the stream) only after the transaction that
stored it has committed, and one left pending by a consumer that stopped (a worker killed
mid-batch) is claimed by another once it has waited `MOMOR_RECORDS_CLAIM_SECONDS`.

It runs in every `celery -A momor worker` (a bootstep, `momor/celery.py`) and, with
`MOMOR_RECORD_IN_GATEWAY`, in gateway processes too."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.db import close_old_connections
from redis.exceptions import RedisError, ResponseError

from billing.admission.redis_store import RECORDS_STREAM
from billing.breaker import REDIS_DOWN
from billing.dead_letters import TRANSIENT
from billing.storing import records_store

log = logging.getLogger(__name__)

GROUP = "momor-recorders"
BATCH = 200
BLOCK_MS = 500
FORGET_IDLE_MS = 3600 * 1000
Entry = tuple[bytes, dict[bytes, bytes] | None]


@cache
def records_client(url: str) -> redis.Redis:
    """A client whose reads may block for BLOCK_MS on top of the Redis time-out."""
    timeout = settings.MOMOR_REDIS_TIMEOUT_SECONDS
    return redis.Redis.from_url(
        url, socket_timeout=timeout + BLOCK_MS / 1000, socket_connect_timeout=timeout
    )


class RecordsConsumer:
    def __init__(self, client: Callable[[], redis.Redis], name: str) -> None:
        self._client, self.name = client, name
        self._claim_from = b"0-0"
        self._next_claim = 0.0
        self._owed = True
        """It may hold records it has not acknowledged (at start, and after a failed batch)."""

    @property
    def client(self) -> redis.Redis:
        """The client of the Redis REDIS_URL names now."""
        return self._client()

    def step(self, block_ms: int | None = BLOCK_MS) -> int:
        """Store one batch: this consumer's own records not yet acknowledged (a batch that
        failed), else records a stopped consumer left, else new ones, waiting up to `block_ms`
        for them (None: not at all). How many it stored."""
        try:
            entries = self._own() or self._claimed() or self._new(block_ms)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._create_group()
            return 0
        if entries:
            self._owed = True
            self._store(entries)
            self._owed = False
        return len(entries)

    def run(self, stop: threading.Event, enabled: Callable[[], bool] = lambda: True) -> None:
        """Consume until `stop` is set; store and database outages are waited out."""
        pause = 0.0
        while not stop.wait(pause):
            if not enabled():
                pause = BLOCK_MS / 1000
                continue
            pause = self._step_or_pause(pause)

    def _step_or_pause(self, pause: float) -> float:
        try:
            self.step()
        except REDIS_DOWN as exc:
            log.warning("records stream unreachable (%s); trying again", type(exc).__name__)
        except RedisError as exc:
            log.warning("Redis refused a records stream command (%s); trying again", exc)
        except TRANSIENT as exc:
            log.warning("database unavailable (%s); records stay pending", type(exc).__name__)
        except Exception:
            log.exception("could not store a batch of records; trying again")
        else:
            return 0.0
        return min(max(pause * 2, 0.25), 5.0)

    def _own(self) -> list[Entry]:
        if not self._owed:
            return []
        entries = self._read("0", block_ms=None)
        self._owed = bool(entries)
        return entries

    def _new(self, block_ms: int | None) -> list[Entry]:
        return self._read(">", block_ms=block_ms)

    def _read(self, since: str, block_ms: int | None) -> list[Entry]:
        found: Any = self.client.xreadgroup(
            GROUP, self.name, {RECORDS_STREAM: since}, count=BATCH, block=block_ms
        )
        return list(found[0][1]) if found else []

    def _claimed(self) -> list[Entry]:
        """Records pending on a consumer that stopped; looked for once a second at most."""
        if time.monotonic() < self._next_claim:
            return []
        self._next_claim = time.monotonic() + 1.0
        idle_ms = int(settings.MOMOR_RECORDS_CLAIM_SECONDS * 1000)
        found: Any = self.client.xautoclaim(
            RECORDS_STREAM, GROUP, self.name, idle_ms, self._claim_from, count=BATCH
        )
        self._claim_from = found[0] if found[1] else b"0-0"
        if found[1]:
            log.warning("claimed %d records left pending by a stopped consumer", len(found[1]))
        else:
            self._forget_stopped_consumers()
        return list(found[1])

    def _store(self, entries: list[Entry]) -> None:
        close_old_connections()
        records_store([(fields or {}).get(b"r", b"") for _, fields in entries])
        ids = [entry_id for entry_id, _ in entries]
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(RECORDS_STREAM, GROUP, *ids)
        pipe.xdel(RECORDS_STREAM, *ids)
        pipe.execute()

    def _create_group(self) -> None:
        try:
            self.client.xgroup_create(RECORDS_STREAM, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _forget_stopped_consumers(self) -> None:
        """Consumers that hold nothing and have not read for an hour (their process is gone)."""
        try:
            consumers: Any = self.client.xinfo_consumers(RECORDS_STREAM, GROUP)
        except ResponseError:  # the stream or group is gone (Redis emptied): nothing to forget
            return
        for consumer in consumers:
            if consumer["pending"] == 0 and consumer["idle"] > FORGET_IDLE_MS:
                self.client.xgroup_delconsumer(RECORDS_STREAM, GROUP, consumer["name"])


def stream_backlog(client: redis.Redis) -> int:
    """Records in the stream not yet stored (stored ones are deleted)."""
    return int(client.xlen(RECORDS_STREAM))


class ConsumerThread:
    """A consumer on a thread of its own: in a Celery worker, or in a gateway process."""

    def __init__(self, name: str, enabled: Callable[[], bool] = lambda: True) -> None:
        self.consumer = RecordsConsumer(lambda: records_client(settings.REDIS_URL), name)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self.consumer.run, args=(self._stop, enabled), name="momor-recorder", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the batch under way (a batch cut short stays pending, claimed later)."""
        self._stop.set()
        self._thread.join(timeout)
