"""Which admission store this process uses."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from billing.admission.base import AdmissionStore
from billing.admission.local import LocalStore
from core.breaker import REDIS


@cache
def store() -> AdmissionStore:
    if settings.REDIS_URL:
        from billing.admission.redis_store import RedisStore

        return RedisStore(settings.REDIS_URL)
    return local_store()


@cache
def local_store() -> LocalStore:
    """This process's own store: embedded mode, and the fallback while Redis is unreachable."""
    return LocalStore()


def admission_store() -> AdmissionStore:
    """Where a call is admitted now: the shared store, or this process's own while the shared
    one is unreachable (its breaker open)."""
    return store() if REDIS.allow() else local_store()
