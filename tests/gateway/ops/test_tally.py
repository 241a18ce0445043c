"""Counts and observations added up in the tally reach prometheus-client exactly as one update
per call would have: the same bucket counts, sum and counter values in the exposition."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.ops.tally import Tally

VALUES = [0.004, 0.005, 0.0051, 0.02, 0.3, 2.5, 7.0, 400.0, 0.0, 1e-9]
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def metrics(registry: CollectorRegistry) -> tuple[Histogram, Counter]:
    histogram = Histogram("d", "durations", ["m"], buckets=BUCKETS, registry=registry)
    counter = Counter("c", "calls", ["m"], registry=registry)
    return histogram, counter


def exposed(registry: CollectorRegistry) -> list[str]:
    """The exposition's samples but the creation times, which differ between registries."""
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]


def test_a_flush_writes_what_updates_one_by_one_would_have() -> None:
    one_by_one, tallied = CollectorRegistry(), CollectorRegistry()
    histogram, counter = metrics(one_by_one)
    for value in VALUES:
        histogram.labels("a").observe(value)
        counter.labels("a").inc()
    counter.labels("b").inc(2.5)
    later_histogram, later_counter = metrics(tallied)
    tally = Tally()
    for value in VALUES:
        tally.add([(later_counter.labels("a"), 1)], [(later_histogram.labels("a"), value)])
    tally.add([(later_counter.labels("b"), 2.5)], [])
    assert exposed(tallied) != exposed(one_by_one)  # nothing before a flush
    tally.flush()
    assert exposed(tallied) == exposed(one_by_one)


async def test_updates_made_on_the_loop_are_flushed_within_the_second() -> None:
    registry = CollectorRegistry()
    _, counter = metrics(registry)
    tally = Tally()
    tally.add([(counter.labels("a"), 1)], [])
    await asyncio.sleep(1.3)
    assert registry.get_sample_value("c_total", {"m": "a"}) == 1.0


def test_immediate_mode_flushes_on_every_call() -> None:
    registry = CollectorRegistry()
    _, counter = metrics(registry)
    tally = Tally()
    tally.immediate = True
    tally.add([(counter.labels("a"), 1)], [])
    assert registry.get_sample_value("c_total", {"m": "a"}) == 1.0
