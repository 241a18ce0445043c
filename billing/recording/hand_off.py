"""The one hand-off from the gateway: `record_call` returns once a finished call's record and
charge are durable, and the gateway awaits it before the last byte of the answer is sent.

- With REDIS_URL, in Redis: one script settles the call's reservation (its cost held as an
  unposted charge) and appends its record to the records stream, which the Celery workers store
  (billing.storing.stream_consumer). The script goes with the other admission scripts of the same
  turn of the event loop, in one pipeline: no round trip of its own.
- In embedded mode, or when Redis cannot take it (the breaker is open, or the script failed or
  timed out), in this process's journal on disk (billing.recording.journal), fsynced with the
  records of the same moment; billing.recording.replay sends it on when a store can take it.

Every step is bounded in time, so a store that is down makes the hand-off fall back, never
hang."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from functools import partial
from typing import Any

from django.conf import settings

from billing.admission.operations import (
    Settlement,
    settle,
    settle_locally,
    settled_in_redis,
    shared_client,
)
from billing.calls.observers import HandedOff, notify
from billing.calls.records import CallRecord, record_payload
from billing.recording.replay import REPLAYER, journal, stop_storer
from billing.recording.settlement import settlement_of
from billing.storing.stream_consumer import ConsumerThread, RecordsConsumer, stream_backlog
from core.breaker import REDIS, REDIS_DOWN

log = logging.getLogger(__name__)

HIGH_WATER = 2_000

_outstanding: set[asyncio.Future[None]] = set()
_in_flight: set[asyncio.Task[object]] = set()
_consumer: ConsumerThread | None = None


async def record_call(record: CallRecord) -> None:
    """Hand a finished call to billing; returns once its record and charge are durable. The
    hand-off goes on if the caller is cancelled meanwhile (a shutdown waits for it)."""
    start()
    began, cost = time.time(), 0
    try:
        settlement = settlement_of(record, record_payload(record))
        cost = settlement.cost
        durable = _hand_off(settlement)
    except Exception:  # a fault here must not cost the call its answer, nor its record
        log.exception("the hand-off of call %s failed: journaling it", record.request_id)
        durable = _journaled(record_payload(record))
    _outstanding.add(durable)
    durable.add_done_callback(_outstanding.discard)
    try:
        await asyncio.shield(durable)
    finally:
        # after the answer is written (the caller sends it before the loop turns again)
        asyncio.get_running_loop().call_soon(notify, HandedOff(record, cost, began, time.time()))


async def make_room() -> None:
    """Count this call in flight, so a shutdown can drain it; while this process has more than
    HIGH_WATER hand-offs unfinished, wait for them, at most a Redis time-out (which also bounds
    each of them)."""
    task = asyncio.current_task()
    if task is not None:
        _in_flight.add(task)
        task.add_done_callback(_in_flight.discard)
    if len(_outstanding) <= HIGH_WATER:
        return
    deadline = time.monotonic() + settings.MOMOR_REDIS_TIMEOUT_SECONDS
    while len(_outstanding) > HIGH_WATER and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


def start() -> None:
    """The journal's replay (which applies what a process that died left) and, where
    configured, this process's own consumer of the records stream."""
    global _consumer
    REPLAYER.start()
    if _consumer is None and settings.MOMOR_RECORD_IN_GATEWAY and settings.REDIS_URL:
        _consumer = ConsumerThread(
            f"gateway-{threading.get_native_id()}", lambda: settings.MOMOR_RECORD_IN_GATEWAY
        )
        _consumer.start()


def _hand_off(settlement: Settlement) -> asyncio.Future[None]:
    """A future done once the record is durable (callbacks rather than a task per call: this
    runs on every call)."""
    now_ms = int(time.time() * 1000)
    sent = settle(settlement, now_ms)
    if sent is None:
        return _journaled(settlement.payload)
    durable: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    sent.add_done_callback(partial(_sent, durable, settlement, now_ms))
    return durable


def _sent(
    durable: asyncio.Future[None], settlement: Settlement, now_ms: int, sent: asyncio.Future[Any]
) -> None:
    failure = "cancelled" if sent.cancelled() else sent.exception()
    if failure is None:
        settled_in_redis(settlement)
        durable.set_result(None)
        return
    log.warning("Redis could not take call %s (%s): journaling it", settlement.request_id, failure)
    settle_locally(settlement, now_ms)  # held here as unposted until the ledger has it
    _journaled(settlement.payload).add_done_callback(lambda _: durable.set_result(None))


def _journaled(payload: bytes) -> asyncio.Future[None]:
    """Done once the record is on disk, or held in memory for the replay: if the disk failed,
    or did not take it within MOMOR_JOURNAL_TIMEOUT_SECONDS (a hung disk holds no call; the
    provider has served it, so it is answered and billed from memory, and should the disk
    write it later too, storing is idempotent on the request id)."""
    journaled = asyncio.wrap_future(journal().append(payload))
    journaled.add_done_callback(partial(_after_journal, payload))
    durable = asyncio.get_running_loop().create_future()
    journaled.add_done_callback(partial(_settle, durable))
    late = asyncio.get_running_loop().call_later(
        settings.MOMOR_JOURNAL_TIMEOUT_SECONDS, _too_late, durable, payload
    )
    durable.add_done_callback(lambda _: late.cancel())
    return durable


def _settle(durable: asyncio.Future[None], _: object) -> None:
    if not durable.done():
        durable.set_result(None)


def _too_late(durable: asyncio.Future[None], payload: bytes) -> None:
    if durable.done():
        return
    log.error("the journal's disk did not answer in time: a record held in memory for the replay")
    REPLAYER.hold(payload)
    REPLAYER.nudge()
    durable.set_result(None)


def _after_journal(payload: bytes, journaled: asyncio.Future[None]) -> None:
    if not journaled.cancelled() and journaled.exception() is not None:
        log.error("the journal could not take a record: held in memory until it can be applied")
        REPLAYER.hold(payload)
    REPLAYER.nudge()


def handoffs_outstanding() -> int:
    """How many hand-offs of this process are not yet durable (the high-water mark of
    `make_room` is HIGH_WATER)."""
    return len(_outstanding)


def running_calls() -> int:
    """How many calls of this process are under way."""
    return sum(not task.done() for task in _in_flight)


def cancel_in_flight() -> int:
    """Cancel the calls still running (a shutdown's grace period is over); each is recorded as
    cancelled, billed for what it delivered."""
    running = [task for task in _in_flight if not task.done()]
    for task in running:
        task.cancel()
    return len(running)


async def shutdown(timeout: float) -> None:
    """Wait for the hand-offs under way, then give the journal one chance to be applied."""
    loop = asyncio.get_running_loop()
    mine = [durable for durable in _outstanding if durable.get_loop() is loop]
    if mine:
        await asyncio.wait(mine, timeout=timeout)
    try:
        async with asyncio.timeout(timeout):
            await asyncio.to_thread(REPLAYER.replay)
    except Exception as exc:  # what is left stays on disk, applied when a process starts
        log.warning("the journal was not applied before exiting (%s)", type(exc).__name__)
    await asyncio.to_thread(stop_storer)
    if _consumer is not None:
        await asyncio.to_thread(_consumer.stop)


def drain(timeout: float = 10.0) -> bool:
    """Wait until every record this process handed off is stored (the journal applied, the
    records stream consumed); False if that took longer than `timeout`. For tests and tools:
    calls never wait on it."""
    deadline = time.monotonic() + timeout
    while _outstanding:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    while not REPLAYER.replay():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return _stream_consumed(deadline)


def _stream_consumed(deadline: float) -> bool:
    """Whether the records stream is empty (not waited for while Redis is unreachable: this
    process journals its records meanwhile). A breaker still open is no proof of that: the
    replay may have just sent the journal to a Redis that answers again."""
    client = shared_client()
    if client is None:
        return True
    if not REDIS.allow():
        try:
            stream_backlog(client)
        except REDIS_DOWN:
            return True
    consumer = RecordsConsumer(lambda: client, f"drain-{threading.get_native_id()}")
    try:
        while stream_backlog(client) > 0:
            if time.monotonic() > deadline:
                return False
            if settings.MOMOR_RECORD_IN_GATEWAY:
                consumer.step(block_ms=None)
            else:  # the workers store them
                time.sleep(0.05)
    except REDIS_DOWN:
        return False
    return True
