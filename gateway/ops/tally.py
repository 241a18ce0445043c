"""Metric updates added up before they reach prometheus-client: a call leaves its counts and
observations here (one list append under a lock), and a flush adds them up and to the
metrics in bulk, one `inc` per counter child and one per histogram bucket, once a second on
the event loop and before every scrape of this process (on every call in prometheus-client's
multiprocess mode, where any process may answer a scrape). Every call paid prometheus-client's
per-update locks and bucket search before (a tenth of the gateway's interpreted work).

prometheus-client has no call that adds several observations to a histogram at once; `flush`
writes a histogram child's bucket counts and sum through its value objects (`_buckets`,
`_sum`, `_upper_bounds`), which the client has kept unchanged since 2017. The metrics tests
read the exposition, so a client that changed them fails there."""

from __future__ import annotations

import asyncio
import threading
from bisect import bisect_left
from collections import Counter, defaultdict
from typing import Any

FLUSH_SECONDS = 1.0


class Tally:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[tuple[list[tuple[Any, float]], list[tuple[Any, float]]]] = []
        self._armed: set[asyncio.AbstractEventLoop] = set()
        self.immediate = False
        """Flush on every call: in multiprocess mode, where another process answers scrapes."""

    def add(self, counts: list[tuple[Any, float]], observed: list[tuple[Any, float]]) -> None:
        """One call's counter increments and histogram observations, by child."""
        with self._lock:
            self._calls.append((counts, observed))
        if self.immediate:
            self.flush()
        else:
            self._arm()

    def flush(self) -> None:
        with self._lock:
            calls, self._calls = self._calls, []
        counts: defaultdict[Any, float] = defaultdict(float)
        observed: defaultdict[Any, list[float]] = defaultdict(list)
        for call_counts, call_observed in calls:
            for child, amount in call_counts:
                counts[child] += amount
            for child, value in call_observed:
                observed[child].append(value)
        for child, amount in counts.items():
            if amount:
                child.inc(amount)
        for child, values in observed.items():
            _observe_all(child, values)

    def _arm(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a thread without a loop: its updates wait for the next flush
            return
        if loop not in self._armed:
            self._armed.add(loop)
            loop.call_later(FLUSH_SECONDS, self._flush_on, loop)

    def _flush_on(self, loop: asyncio.AbstractEventLoop) -> None:
        self._armed.discard(loop)
        self.flush()


def _observe_all(child: Any, values: list[float]) -> None:
    """The histogram child's `observe` for each value, in one pass."""
    bounds = child._upper_bounds
    in_bucket = Counter(bisect_left(bounds, value) for value in values)
    for index, count in in_bucket.items():
        child._buckets[index].inc(count)
    child._sum.inc(sum(values))


TALLY = Tally()
