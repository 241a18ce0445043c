"""The live feed's publisher: an event loop on a daemon thread of its own, started on first use,
on which the feed's batches are sent one after another. The channel layer keeps its Redis
connections per event loop, so on this one they are opened once and serve every batch, where a
loop per send would open them again (and leave the loop to the cycle collector)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

Work = Callable[[], Coroutine[Any, Any, None]]

MAX_BEHIND = 8
"""Batches handed over and not sent yet beyond which another is dropped: the feed is best
effort, and a Redis too slow for it must not pile its messages up in memory."""


class Publisher:
    """Runs the work handed to it on its own loop, in the order it was handed over."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._turn = asyncio.Lock()
        self._count = threading.Lock()
        self.behind = 0
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="momor-live-feed", daemon=True
        )
        self.thread.start()

    def run(self, work: Work, wait: float) -> None:
        """Run `work()` after the work handed over before it, waiting up to `wait` seconds for
        it to end; what is still under way then goes on without the caller."""
        if not self._enter():
            log.warning("the live feed is %d batches behind: a batch is dropped", MAX_BEHIND)
            return
        future = asyncio.run_coroutine_threadsafe(self._in_turn(work), self.loop)
        try:
            future.result(timeout=wait)
        except TimeoutError:
            log.warning("the live feed is still sending after %.1f s; not waiting", wait)

    async def _in_turn(self, work: Work) -> None:
        try:
            async with self._turn:
                await work()
        finally:
            with self._count:
                self.behind -= 1

    def _enter(self) -> bool:
        with self._count:
            if self.behind >= MAX_BEHIND:
                return False
            self.behind += 1
            return True


_lock = threading.Lock()
_publisher: Publisher | None = None
# A forked child's copy of the parent's publisher, kept from the collector: closing its loop
# would close the connections the parent still uses.
_inherited: list[Publisher] = []


def publisher() -> Publisher:
    """This process's publisher, started on first use (a forked process starts its own)."""
    global _publisher
    with _lock:
        if _publisher is None:
            _publisher = Publisher()
        return _publisher


def _after_fork() -> None:
    global _publisher, _lock
    if _publisher is not None:
        _inherited.append(_publisher)
    _publisher, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
