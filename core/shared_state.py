"""Gateway state shared by every process in Redis (sessions, X-Request-Id claims, offering
figures). It follows the admission store's breaker: in embedded mode, or while Redis is
unreachable, each caller falls back to this process's own memory at once."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from django.conf import settings
from redis.exceptions import RedisError

from core import redis_keys
from core.breaker import REDIS, REDIS_DOWN
from core.redis_client import AsyncClient, async_client

log = logging.getLogger(__name__)

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
POOL_SIZE = 16
_clients: dict[tuple[asyncio.AbstractEventLoop, str], AsyncClient] = {}


class Unshared:
    """Redis could not be used: the caller uses its own fallback."""


UNSHARED = Unshared()


def org_key(org_id: int, kind: str, name: str) -> str:
    """A key of one organization, in its slot (`core.redis_keys`)."""
    return redis_keys.org_key(org_id, kind, name)


async def shared(command: Callable[[AsyncClient], Awaitable[T]]) -> T | Unshared:
    """Run a command on the shared Redis; UNSHARED when there is none or it cannot answer."""
    if not settings.REDIS_URL or not REDIS.allow():
        return UNSHARED
    try:
        result = await command(_client())
    except REDIS_DOWN as exc:
        REDIS.failed()
        log.warning("Redis unreachable (%s): using this process's own memory", exc)
        return UNSHARED
    except RedisError as exc:
        log.warning("Redis refused a gateway command (%s): using this process's own memory", exc)
        return UNSHARED
    REDIS.succeeded()
    return result


def _client() -> AsyncClient:
    place = (asyncio.get_running_loop(), settings.REDIS_URL)
    client = _clients.get(place)
    if client is None:
        for closed in [key for key in _clients if key[0].is_closed()]:
            del _clients[closed]
        client = _clients[place] = async_client(
            settings.REDIS_URL, pool_size=POOL_SIZE, timeout=settings.MOMOR_REDIS_TIMEOUT_SECONDS
        )
    return client


class Expiring(Generic[K, V]):
    """This process's own bounded map whose entries expire: the fallback of a shared key."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K, now: float) -> V | None:
        found = self._items.get(key)
        if found is None or found[0] <= now:
            return None
        return found[1]

    def put(self, key: K, value: V, expires: float) -> None:
        self._items[key] = (expires, value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
