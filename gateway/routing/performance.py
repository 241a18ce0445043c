"""Figures of each offering measured on real calls, over a rolling 15-minute window: its
throughput (completion tokens a second), its latency (time to the first token) and its
quality (the share of its tries that served the call). Each process counts its calls and adds
them to Redis once a second; Redis keeps them per minute, so every process reads the same
figures, read with a short cache; this process's own memory stands in while Redis is
unreachable."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from billing.calls.observers import HandedOff
from billing.calls.records import AttemptRecord
from core.redis_client import AsyncClient
from core.shared_state import Unshared, shared
from gateway.catalog.snapshot import ModelInfo

WINDOW_MINUTES = 15
CACHE_SECONDS = 2.0
FLUSH_SECONDS = 1.0
FIELDS = ("calls", "served", "ttft_ms", "timed", "tokens", "generating_ms")

_flushing: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
_pending: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
_local: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
_cache: dict[int, tuple[float, Figures | None]] = {}


@dataclass(frozen=True, slots=True)
class Figures:
    calls: int
    throughput: float | None
    """Completion tokens a second, while generating."""
    latency_ms: float | None
    """Time to the first token."""
    quality: float
    """The share of tries that served."""

    def as_dict(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "throughput": None if self.throughput is None else round(self.throughput, 1),
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms),
            "quality": round(self.quality, 4),
        }


def _key(offering_id: int, minute: int) -> str:
    return f"momor:figures:{{offering:{offering_id}}}:{minute}"


def measured(attempt: AttemptRecord) -> dict[str, int] | None:
    """What one try adds to its offering's figures; None for a try that says nothing of the
    offering (a call it could not carry, a client that left)."""
    if attempt.error.startswith("cannot carry") or (
        attempt.http_status is None and not attempt.error
    ):
        return None
    served = attempt.http_status == 200 and not attempt.error
    counts = dict.fromkeys(FIELDS, 0)
    counts["calls"], counts["served"] = 1, int(served)
    if served:
        first = attempt.first_token_ms if attempt.first_token_ms is not None else attempt.latency_ms
        counts["ttft_ms"], counts["timed"] = first, 1
        tokens = attempt.tokens.completion if attempt.tokens else 0
        generating = attempt.latency_ms - first if attempt.first_token_ms else attempt.latency_ms
        if tokens > 0:
            # an answer whole within the millisecond of its first token came in one read
            counts["tokens"], counts["generating_ms"] = tokens, max(generating, 1)
    return counts


def observe(handed: HandedOff) -> None:
    """Add a handed-off call's tries to their offerings' figures: counted in this process and
    written to Redis once a second, in one pipeline, off the calls' path."""
    minute = int(time.time() // 60)
    found = False
    for attempt in handed.record.attempts:
        counts = measured(attempt)
        if counts is not None and attempt.offering_id:
            bucket = _pending[(attempt.offering_id, minute)]
            for name, value in counts.items():
                bucket[name] += value
            found = True
    loop = asyncio.get_running_loop()
    if found and loop not in _flushing:
        _flushing[loop] = loop.create_task(_flush_soon())
        _flushing[loop].add_done_callback(lambda _: _flushing.pop(loop, None))


async def _flush_soon() -> None:
    await asyncio.sleep(FLUSH_SECONDS)
    found = dict(_pending)
    _pending.clear()

    async def write(client: AsyncClient) -> None:
        pipe = client.pipeline(transaction=False)
        for (offering, minute), counts in found.items():
            key = _key(offering, minute)
            for name, value in counts.items():
                if value:
                    pipe.hincrby(key, name, value)
            pipe.expire(key, (WINDOW_MINUTES + 1) * 60)
        await pipe.execute()

    if isinstance(await shared(write), Unshared):
        now = int(time.time() // 60)
        for stale in [k for k in _local if k[1] <= now - WINDOW_MINUTES]:
            del _local[stale]
        for where, counts in found.items():
            bucket = _local[where]
            for name, value in counts.items():
                bucket[name] += value


async def ranking_figures(models: Iterable[ModelInfo], sort: str) -> dict[int, Figures] | None:
    """The figures a call's offerings are ranked on: none where it sorts by price."""
    if sort == "price":
        return None
    return await figures_of(o.id for m in models for o in m.offerings)


async def figures_of(offering_ids: Iterable[int]) -> dict[int, Figures]:
    """The figures of these offerings (those with none measured are left out)."""
    now, wanted = time.monotonic(), sorted(set(offering_ids))
    missing = [o for o in wanted if o not in _cache or _cache[o][0] <= now]
    if missing:
        for offering, totals in (await _read(missing)).items():
            _cache[offering] = (now + CACHE_SECONDS, _figures(totals))
    return {o: f for o in wanted if (f := _cache[o][1]) is not None}


async def _read(offering_ids: list[int]) -> dict[int, dict[str, int]]:
    minute = int(time.time() // 60)
    minutes = range(minute - WINDOW_MINUTES + 1, minute + 1)

    async def read(client: AsyncClient) -> list[dict[bytes, bytes]]:
        pipe = client.pipeline(transaction=False)
        for offering in offering_ids:
            for at in minutes:
                pipe.hgetall(_key(offering, at))
        return list(await pipe.execute())

    rows = await shared(read)
    totals: dict[int, dict[str, int]] = {o: dict.fromkeys(FIELDS, 0) for o in offering_ids}
    for index, offering in enumerate(offering_ids):
        for at_index, at in enumerate(minutes):
            if isinstance(rows, Unshared):
                bucket = {k: v for k, v in _local.get((offering, at), {}).items()}
            else:
                raw = rows[index * WINDOW_MINUTES + at_index]
                bucket = {k.decode(): int(v) for k, v in raw.items()}
            for name, value in bucket.items():
                totals[offering][name] += value
    return totals


def _figures(totals: dict[str, int]) -> Figures | None:
    if totals["calls"] == 0:
        return None
    generating = totals["generating_ms"]
    return Figures(
        calls=totals["calls"],
        throughput=totals["tokens"] * 1000 / generating if generating else None,
        latency_ms=totals["ttft_ms"] / totals["timed"] if totals["timed"] else None,
        quality=totals["served"] / totals["calls"],
    )


def forget_local() -> None:
    _pending.clear()
    _local.clear()
    _cache.clear()
