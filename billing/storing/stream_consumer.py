"""The consumer of the records stream: the records the settle script appends to a Redis stream
are stored in the database here. Consumers share one group, so each record goes to one of
them; a record is acknowledged (and deleted from the stream) only after the transaction that
stored it has committed, and one left pending by a consumer that stopped (a worker killed
mid-batch) is claimed by another once it has waited `MOMOR_RECORDS_CLAIM_SECONDS`. Once a
second it also settles the reservations of streams whose process died mid-answer
(billing.admission.intents).

It runs in every `celery -A momor worker` (a bootstep, `momor/celery.py`) and, with
`MOMOR_RECORD_IN_GATEWAY`, in gateway processes too."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from redis.cluster import RedisCluster
from redis.exceptions import RedisError, ResponseError

from billing.admission.operations import sweep_abandoned
from billing.storing.dead_letters import TRANSIENT
from billing.storing.store import records_store
from core.breaker import REDIS_DOWN
from core.redis_client import SyncClient, sync_client
from core.redis_keys import records_streams

log = logging.getLogger(__name__)

GROUP = "momor-recorders"
BATCH = 200
BLOCK_MS = 500
# After a batch short of BATCH, the records arriving meanwhile are let to gather this long: a
# consumer storing each call as it came would commit (and wake its database and Redis) once
# a call, on the cores the gateways run on. A batch costs the worker about as much as 20
# records: at 50 ms, a gateway at a few hundred calls a second made batches of 10 to 20, and
# the database and Redis work they woke took the gateway's core from its calls.
LINGER_SECONDS = 0.25
# A cluster cannot read streams of several slots in one blocking call: each is read without
# blocking, and an empty round waits this long before the next.
CLUSTER_IDLE_MS = 50
FORGET_IDLE_MS = 3600 * 1000
FORGET_EVERY_SECONDS = 60.0
Entry = tuple[bytes, dict[bytes, bytes] | None]
Found = list[tuple[str, list[Entry]]]
"""Entries read, by the stream they came from."""

# Acknowledged and deleted together: a record acknowledged but left in its stream would only
# be dead weight, but the two belong in one step.
ACK = """
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
"""


@cache
def records_client(url: str) -> SyncClient:
    """A client whose reads may block for BLOCK_MS on top of the Redis time-out."""
    timeout = settings.MOMOR_REDIS_TIMEOUT_SECONDS
    read_timeout = timeout + BLOCK_MS / 1000
    return sync_client(url, socket_timeout=read_timeout, socket_connect_timeout=timeout)


class RecordsConsumer:
    """Reads every records stream (one per slot group, `core.redis_keys`) in one group."""

    def __init__(self, client: Callable[[], SyncClient], name: str) -> None:
        self._client, self.name = client, name
        self.streams = records_streams()
        self._claim_from = dict.fromkeys(self.streams, b"0-0")
        self._next_claim = 0.0
        self._next_forget = 0.0
        self._owed = True
        """It may hold records it has not acknowledged (at start, and after a failed batch)."""

    @property
    def client(self) -> SyncClient:
        """The client of the Redis REDIS_URL names now."""
        return self._client()

    def step(self, block_ms: int | None = BLOCK_MS) -> int:
        """Store one batch per stream: this consumer's own records not yet acknowledged (a
        batch that failed), else records a stopped consumer left, else new ones, waiting up to
        `block_ms` for them (None: not at all). How many it stored."""
        try:
            found = self._own() or self._claimed() or self._new(block_ms)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._create_groups()
            return 0
        if found:
            self._owed = True
            for stream, entries in found:
                self._store(stream, entries)
            self._owed = False
        return sum(len(entries) for _, entries in found)

    def run(self, stop: threading.Event, enabled: Callable[[], bool] = lambda: True) -> None:
        """Consume until `stop` is set; store and database outages are waited out."""
        pause = 0.0
        while not stop.wait(pause):
            if not _enabled(enabled):
                pause = BLOCK_MS / 1000
                continue
            pause = self._step_or_pause(pause)

    def _step_or_pause(self, pause: float) -> float:
        """One step; after a short batch, the linger; after a failure, a pause that doubles
        up to 5 s."""
        try:
            stored = self.step()
        except REDIS_DOWN as exc:
            log.warning("records stream unreachable (%s); trying again", type(exc).__name__)
        except RedisError as exc:
            log.warning("Redis refused a records stream command (%s); trying again", exc)
        except TRANSIENT as exc:
            log.warning("database unavailable (%s); records stay pending", type(exc).__name__)
        except Exception:
            log.exception("could not store a batch of records; trying again")
        else:
            return LINGER_SECONDS if 0 < stored < BATCH else 0.0
        return min(max(pause * 2, 0.25), 5.0)

    def _own(self) -> Found:
        if not self._owed:
            return []
        found = self._read("0", block_ms=None)
        self._owed = bool(found)
        return found

    def _new(self, block_ms: int | None) -> Found:
        return self._read(">", block_ms=block_ms)

    def _read(self, since: str, block_ms: int | None) -> Found:
        client = self.client
        if not isinstance(client, RedisCluster):
            streams: dict[Any, Any] = dict.fromkeys(self.streams, since)
            found: Any = client.xreadgroup(GROUP, self.name, streams, count=BATCH, block=block_ms)
            return [(stream.decode(), list(entries)) for stream, entries in found or [] if entries]
        return self._read_each(client, since, block_ms)

    def _read_each(self, client: RedisCluster, since: str, block_ms: int | None) -> Found:
        pipe = client.pipeline()  # type: ignore[no-untyped-call]  # redis-py's cluster pipeline is unannotated
        for stream in self.streams:
            pipe.xreadgroup(GROUP, self.name, {stream: since}, count=BATCH)
        replies = pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        found = [(s, list(r[0][1])) for s, r in zip(self.streams, replies, strict=True) if r]
        found = [(stream, entries) for stream, entries in found if entries]
        if not found and block_ms:
            time.sleep(min(block_ms, CLUSTER_IDLE_MS) / 1000)
        return found

    def _claimed(self) -> Found:
        """Records pending on a consumer that stopped; looked for once a second at most, after
        the streams of processes that died are settled (their records are read as new ones)."""
        if time.monotonic() < self._next_claim:
            return []
        self._next_claim = time.monotonic() + 1.0
        if swept := sweep_abandoned(self.client):
            log.warning(
                "settled %d streams a stopped process left, from what they delivered", swept
            )
        idle_ms = int(settings.MOMOR_RECORDS_CLAIM_SECONDS * 1000)
        found: Found = []
        for stream in self.streams:
            claimed: Any = self.client.xautoclaim(
                stream, GROUP, self.name, idle_ms, self._claim_from[stream], count=BATCH
            )
            self._claim_from[stream] = claimed[0] if claimed[1] else b"0-0"
            if claimed[1]:
                log.warning("claimed %d records a stopped consumer left", len(claimed[1]))
                found.append((stream, list(claimed[1])))
        if not found and time.monotonic() >= self._next_forget:
            self._next_forget = time.monotonic() + FORGET_EVERY_SECONDS
            self._forget_stopped_consumers()
        return found

    def _store(self, stream: str, entries: list[Entry]) -> None:
        close_old_connections()
        records_store([(fields or {}).get(b"r", b"") for _, fields in entries])
        ids = [entry_id for entry_id, _ in entries]
        self.client.eval(ACK, 1, stream, GROUP, *ids)

    def _create_groups(self) -> None:
        for stream in self.streams:
            try:
                self.client.xgroup_create(stream, GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def _forget_stopped_consumers(self) -> None:
        """Consumers that hold nothing and have not read for an hour (their process is gone)."""
        for stream in self.streams:
            try:
                consumers: Any = self.client.xinfo_consumers(stream, GROUP)
            except ResponseError:  # the stream or group is gone (Redis emptied)
                continue
            for consumer in consumers:
                if consumer["pending"] == 0 and consumer["idle"] > FORGET_IDLE_MS:
                    self.client.xgroup_delconsumer(stream, GROUP, consumer["name"])


def stream_backlog(client: SyncClient) -> int:
    """Records in the streams not yet stored (stored ones are deleted)."""
    pipe = client.pipeline(transaction=False)
    for stream in records_streams():
        pipe.xlen(stream)
    return sum(int(length) for length in pipe.execute())


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


def _enabled(enabled: Callable[[], bool]) -> bool:
    """Whether to consume now; a check that fails (settings being swapped under it) is a no,
    never the end of the consumer's thread."""
    try:
        return enabled()
    except Exception:
        log.warning("could not tell whether to consume records; trying again", exc_info=True)
        return False
