"""Database work of the gateway runs off the event loop, on two dedicated threads: one for
lookups a call waits on (an API key seen for the first time), one for background refreshes.
A call waits for a lookup at most MOMOR_DB_TIMEOUT_SECONDS: a database that does not answer
is a database that is down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError, close_old_connections

T = TypeVar("T")

_lookups = ThreadPoolExecutor(max_workers=2, thread_name_prefix="momor-lookup")
_refresh = ThreadPoolExecutor(max_workers=1, thread_name_prefix="momor-refresh")


def _fresh(func: Callable[[], T]) -> Callable[[], T]:
    """The job as a request of its own: the thread's connection is closed if it failed or
    outlived CONN_MAX_AGE, and otherwise checked before the job's first query
    (CONN_HEALTH_CHECKS), so a connection the database dropped is replaced, not used."""

    def run() -> T:
        close_old_connections()
        return func()

    return run


async def lookup(func: Callable[[], T]) -> T:
    """Raises OperationalError (a DatabaseError) when the lookup takes too long."""
    running = asyncio.get_running_loop().run_in_executor(_lookups, _fresh(func))
    try:
        async with asyncio.timeout(settings.MOMOR_DB_TIMEOUT_SECONDS):
            return await running
    except TimeoutError:
        raise OperationalError("the database did not answer in time") from None


async def refresh(func: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_refresh, _fresh(func))
