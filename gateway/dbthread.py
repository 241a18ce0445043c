"""Database work of the gateway runs off the event loop, on two dedicated threads: one for
lookups a call waits on (an API key seen for the first time), one for background refreshes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import close_old_connections

T = TypeVar("T")

_lookups = ThreadPoolExecutor(max_workers=2, thread_name_prefix="momor-lookup")
_refresh = ThreadPoolExecutor(max_workers=1, thread_name_prefix="momor-refresh")


def _fresh(func: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        close_old_connections()
        return func()

    return run


async def lookup(func: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_lookups, _fresh(func))


async def refresh(func: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_refresh, _fresh(func))
