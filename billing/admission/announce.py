"""Telling admission what the ledger now holds: charges posted (no longer held as unposted)
and the balances after them, in the shared store and in this process's own when it has
admitted calls of that organization (it is the fallback while Redis is unreachable)."""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from billing.admission.base import Posted
from billing.admission.local import LocalStore
from billing.admission.select import local_store, store
from core.breaker import REDIS, REDIS_DOWN

log = logging.getLogger(__name__)


def charges_posted(posted: list[Posted]) -> None:
    """Never raises: what is not announced now, admission reconciles from the ledger."""
    if not posted:
        return
    shared, own = store(), local_store()
    if shared is not own and REDIS.allow():
        try:
            shared.posted_many(posted)
        except (RedisError, *REDIS_DOWN) as exc:
            if isinstance(exc, REDIS_DOWN):
                REDIS.failed()
            log.warning("could not announce %d posted charges to admission", len(posted))
        else:
            REDIS.succeeded()
    if isinstance(own, LocalStore):
        own.posted_many([p for p in posted if own.knows(p[0])])
