"""Which admission store this process uses."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from billing.admission.base import AdmissionStore
from billing.admission.local import LocalStore


@cache
def store() -> AdmissionStore:
    if settings.REDIS_URL:
        from billing.admission.redis_store import RedisStore

        return RedisStore(settings.REDIS_URL)
    return local_store()


@cache
def local_store() -> AdmissionStore:
    """This process's own store: embedded mode, and the fallback while Redis is unreachable."""
    return LocalStore()
