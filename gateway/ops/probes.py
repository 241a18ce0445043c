"""The load balancer's probes. `/healthz`: the process serves (nothing else is touched).
`/readyz`: the catalog is loaded, the database and Redis answer within
MOMOR_PROBE_TIMEOUT_SECONDS, and the record hand-off is not past its high-water mark. A store
that does not answer fails its check once the bound is over: the probe never waits longer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor

import redis.asyncio as aioredis
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from billing.recording import hand_off as recording
from gateway.catalog.state import STATE

OK = "ok"
NOT_USED = "not used"
"""The check of a store this deployment does without (Redis, in embedded mode)."""
# The database check runs on a thread of its own, one at a time: a probe that finds the
# previous check still waiting on a dead database reports it without starting another.
_database = ThreadPoolExecutor(max_workers=1, thread_name_prefix="momor-probe")
_pending: asyncio.Future[None] | None = None


async def readiness() -> dict[str, str]:
    """Each check and what it found: "ok", or why not."""
    names = ["catalog", "database", "redis", "handoffs"]
    found = await asyncio.gather(_catalog(), _bounded(_database_check()), _bounded(_redis()))
    return dict(zip(names, [*found, _handoffs()], strict=True))


def ready(checks: dict[str, str]) -> bool:
    return all(found in (OK, NOT_USED) for found in checks.values())


async def _bounded(check: Awaitable[str]) -> str:
    try:
        async with asyncio.timeout(settings.MOMOR_PROBE_TIMEOUT_SECONDS):
            return await check
    except TimeoutError:
        return "no answer in time"


async def _catalog() -> str:
    if STATE.catalog is not None:
        return OK
    loading = asyncio.ensure_future(STATE.ready())  # the first probe starts the load
    try:
        async with asyncio.timeout(settings.MOMOR_PROBE_TIMEOUT_SECONDS):
            await asyncio.shield(loading)
    except TimeoutError:
        return "loading"
    except Exception:
        return "cannot be read"
    return OK


async def _database_check() -> str:
    global _pending
    if _pending is not None and not _pending.done():
        return "no answer yet"
    _pending = asyncio.get_running_loop().run_in_executor(_database, _select_one)
    try:
        await asyncio.shield(_pending)
    except DatabaseError as exc:
        return f"unreachable ({type(exc).__name__})"
    return OK


def _select_one() -> None:
    close_old_connections()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        connection.close_if_unusable_or_obsolete()
        raise


_clients: dict[asyncio.AbstractEventLoop, aioredis.Redis] = {}


async def _redis() -> str:
    if not settings.REDIS_URL:
        return NOT_USED  # embedded mode
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        bound = settings.MOMOR_PROBE_TIMEOUT_SECONDS
        client = _clients[loop] = aioredis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=bound, socket_connect_timeout=bound
        )
    try:
        await client.ping()
    except (aioredis.RedisError, OSError) as exc:
        return f"unreachable ({type(exc).__name__})"
    return OK


def _handoffs() -> str:
    outstanding = recording.handoffs_outstanding()
    if outstanding > recording.HIGH_WATER:
        return (
            f"{outstanding} record hand-offs outstanding (high-water mark {recording.HIGH_WATER})"
        )
    return OK
