"""A circuit breaker for a store a call depends on (Redis): after a failure to reach it, the
process uses its fallbacks (its own admission counters, the local journal) at once, instead of
making every call wait for the store's time-out; after a cool-down one call tries the store
again, and its success brings the process back."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from core.redis_pipeline import ConnectFailed
from core.redis_refusals import REFUSALS

log = logging.getLogger(__name__)


class Breaker:
    """Closed (the store is used), open (fallbacks are used), or probing (open, cool-down over:
    one caller at a time tries the store)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._opened_at: float | None = None
        self._probed_at: float | None = None

    @property
    def closed(self) -> bool:
        return self._opened_at is None

    def allow(self) -> bool:
        """Whether this caller may use the store now."""
        if self._opened_at is None:
            return True
        with self._lock:
            if self._opened_at is None:
                return True
            now, cooldown = time.monotonic(), settings.MOMOR_BREAKER_COOLDOWN_SECONDS
            if now - self._opened_at < cooldown:
                return False
            if self._probed_at is not None and now - self._probed_at < cooldown:
                return False  # a probe is under way (one that never reported is retried)
            self._probed_at = now
            return True

    def succeeded(self) -> None:
        if self._opened_at is None:
            return
        with self._lock:
            if self._opened_at is not None:
                log.warning("%s answers again: leaving the fallbacks", self.name)
            self._opened_at = self._probed_at = None

    def failed(self) -> None:
        """The store could not be used (refused, reset, timed out, or taking no writes)."""
        with self._lock:
            if self._opened_at is None:
                log.warning("%s unreachable: using the fallbacks", self.name)
            self._opened_at, self._probed_at = time.monotonic(), None

    def reset(self) -> None:
        with self._lock:
            self._opened_at = self._probed_at = None


REDIS = Breaker("Redis")
# What says Redis cannot be used (as opposed to one command it refused): it cannot be reached,
# or it answers every write with an error (out of memory, read-only, a failed snapshot).
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, TimeoutError, OSError, *REFUSALS)


def maybe_carried_out(failure: BaseException) -> bool:
    """Whether Redis may have run a command that failed this way: yes unless it was never
    reached (redis-py says "... connecting to ..." when connecting failed or timed out) or it
    refused to write (a script's first write refused, so it wrote nothing)."""
    if isinstance(failure, (ConnectFailed, *REFUSALS)):  # a refused write runs nothing
        return False
    return "connecting to" not in str(failure)
