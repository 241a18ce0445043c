"""The live feed's publisher (billing.live.publisher): the work handed over runs in order on its
loop, the caller waits no longer than it asked, a publisher too far behind drops what it cannot
keep, and a forked process starts a publisher of its own."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator

import pytest

from billing.live.publisher import MAX_BEHIND, Publisher, Work, publisher


@pytest.fixture
def own() -> Iterator[Publisher]:
    one = Publisher()
    yield one
    one.loop.call_soon_threadsafe(one.loop.stop)
    one.thread.join(5)
    one.loop.close()


def test_work_runs_in_the_order_handed_over_and_the_caller_waits_no_longer_than_asked(
    own: Publisher,
) -> None:
    done: list[str] = []

    async def slow() -> None:
        await asyncio.sleep(0.3)
        done.append("slow")

    async def fast() -> None:
        done.append("fast")

    started = time.monotonic()
    own.run(slow, wait=0.05)
    assert time.monotonic() - started < 0.25 and done == []
    own.run(fast, wait=2)
    assert done == ["slow", "fast"]
    assert own.behind == 0


def test_a_publisher_too_far_behind_drops_what_it_cannot_keep(own: Publisher) -> None:
    release = threading.Event()
    ran: list[int] = []

    def work(n: int) -> Work:
        async def one() -> None:
            await asyncio.to_thread(release.wait, 5)
            ran.append(n)

        return one

    for n in range(MAX_BEHIND + 2):
        own.run(work(n), wait=0)
    release.set()
    deadline = time.monotonic() + 5
    while own.behind and time.monotonic() < deadline:
        time.sleep(0.01)
    own.run(work(-1), wait=5)

    assert ran == [*range(MAX_BEHIND), -1]


def test_a_forked_process_starts_a_publisher_of_its_own() -> None:
    parent = publisher()
    pid = os.fork()
    if pid == 0:  # the child: exits at once, whatever happens
        try:
            ran: list[bool] = []

            async def mark() -> None:
                ran.append(True)

            child = publisher()
            child.run(mark, wait=5)
            os._exit(0 if child is not parent and ran == [True] else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert publisher() is parent and parent.thread.is_alive()
