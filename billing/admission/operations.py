"""Admission's operations, as the rest of Momor calls them; outside billing.admission, only this
module and the package's values are imported (the `admission-operations` import contract).

- **admit**: the call is counted against its key's rate window and its worst cost reserved;
  **count**: a call refused before admission is counted all the same; **renew**: a running
  call's reservation is held on.
- **settle**: once the call ends, its reservation becomes its charge (held as unposted until
  the ledger has it) and its record is appended to the records stream, in one script;
  **release**: a settle with no charge and no record, which only takes the reservation off
  (`released`). A reservation that is neither expires: a stream's is then settled from its
  intent (`mark`, `sweep_abandoned`).
- The ledger's postings and balances are announced back (`charges_posted`, `sync_balance`).

Each operation acts on the store that holds what it names: the shared one, Redis
(`redis_store.py`: one Lua script each, ADMIT, COUNT, RENEW, SETTLE, ADVANCE, and
`intents.py`'s MARK and SWEEP), or this process's own (`local.py`: embedded mode, and the
fallback while Redis is unreachable), both `base.AdmissionStore`s; `select.py` says which is
which."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from redis.exceptions import RedisError

from billing.admission.backlog import backlogs
from billing.admission.base import (
    AdmissionStore,
    AdmitRequest,
    KeySpend,
    Limit,
    NeedBalance,
    NeedSpend,
    Posted,
    RateState,
    Refused,
    Ticket,
)
from billing.admission.intents import Intent, sweep_abandoned
from billing.admission.local import LocalStore
from billing.admission.redis_store import RedisStore, Settlement
from billing.admission.select import admission_store, local_store, store
from core.breaker import REDIS, REDIS_DOWN
from core.redis_client import SyncClient

__all__ = [
    "AdmissionStore",
    "AdmitRequest",
    "Intent",
    "KeySpend",
    "Limit",
    "NeedBalance",
    "NeedSpend",
    "Posted",
    "RateState",
    "Refused",
    "Settlement",
    "Ticket",
    "admission_store",
    "admit",
    "charges_posted",
    "count",
    "hold",
    "in_redis",
    "local_store",
    "mark",
    "mirror_backlogs",
    "open_reservations",
    "released",
    "renew",
    "settle",
    "settle_locally",
    "settle_many",
    "settled_in_redis",
    "shared_client",
    "store",
    "sweep_abandoned",
    "sync_balance",
    "unposted",
]

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _monotonic_ms() -> int:
    """For what this process compares with itself alone: a wall clock set back leaves it be."""
    return int(time.monotonic() * 1000)


# The stores -----------------------------------------------------------------------------------
# `store()`: the shared store (Redis with REDIS_URL, else this process's own);
# `local_store()`: this process's own; `admission_store()`: where a call is admitted now, the
# shared store or, while its breaker is open, this process's own.


def in_redis() -> bool:
    """Whether admission is shared through Redis (REDIS_URL is set), rather than held by this
    process alone (embedded mode)."""
    return isinstance(store(), RedisStore)


def shared_client() -> SyncClient | None:
    """The shared store's Redis client, from a thread (the records streams are in the same
    Redis); None in embedded mode."""
    shared = store()
    return shared.sync if isinstance(shared, RedisStore) else None


def _redis() -> RedisStore:
    shared = store()
    if not isinstance(shared, RedisStore):
        raise RuntimeError("admission is not shared through Redis: REDIS_URL is not set")
    return shared


# A call's reservation -------------------------------------------------------------------------


async def admit(request: AdmitRequest, on: AdmissionStore) -> Ticket:
    """Count the call against its key's rate window and reserve its amount, on `on` (the store
    `admission_store()` names, or this process's own when the shared one did not answer).
    Raises Refused (rate, credits, budget), NeedBalance or NeedSpend (the store holds
    no balance, or no spend of a meter, yet: loaded from the ledger, then asked again), and
    RedisError when Redis does not answer."""
    return await on.admit(request)


async def count(org_id: int, key_tag: str, limit: int) -> RateState:
    """Count a call refused after its key was known against the key's window: where calls are
    admitted now, or on this process's own counters when Redis does not answer."""
    try:
        return await admission_store().count(org_id, key_tag, limit, _now_ms())
    except RedisError:
        return await local_store().count(org_id, key_tag, limit, _now_ms())


async def renew(ticket: Ticket, ttl_ms: int) -> bool:
    """Hold a running call's reservation until `ttl_ms` from now, in the store that issued it;
    False when it is no longer held (settled, or already expired). Raises RedisError when
    Redis does not answer."""
    held = store() if ticket.shared else local_store()
    return await held.renew(ticket, _now_ms(), ttl_ms)


def settle(settlement: Settlement, now_ms: int) -> asyncio.Future[Any] | None:
    """Settle a finished call: its reservation released and its cost held as an unposted charge
    until the ledger has it.

    A reservation this process's own store issued is settled there, and so is every one while
    Redis cannot take the settle (embedded mode, or its breaker open). With Redis taking it,
    the SETTLE script settles the call there and appends its record to the records stream,
    atomically, sent with the other scripts of this turn of the event loop: the future is done
    once Redis has both (then `settled_in_redis`; or failed: then `settle_locally`, and the
    record to the journal).
    None when Redis cannot take it: the record goes to the journal."""
    ticket, shared = settlement.ticket, store()
    to_redis = isinstance(shared, RedisStore) and REDIS.allow()
    if ticket is not None and (not ticket.shared or not to_redis):
        # held here as unposted until the ledger has it (one Redis admitted too: it is
        # journaled, and this process's own counters admit calls meanwhile)
        local_store().settle(ticket, settlement.cost, settlement.request_id, now_ms)
    if not isinstance(shared, RedisStore) or not to_redis:
        return None
    return shared.hand_off(settlement, now_ms)


def settled_in_redis(settlement: Settlement) -> None:
    """A call Redis has settled: this process's own store, which admits calls should Redis stop
    answering, counts it as Redis now does, rather than as the reservation it last read there."""
    ticket = settlement.ticket
    if ticket is not None and ticket.shared:
        local_store().settled_in_redis(ticket, settlement.cost, _monotonic_ms())


def settle_locally(settlement: Settlement, now_ms: int) -> None:
    """Settle on this process's own counters a call Redis admitted whose settle Redis did not
    take (its record goes to the journal): its charge held here as unposted until the ledger
    has it."""
    ticket = settlement.ticket
    if ticket is not None and ticket.shared:
        local_store().settle(ticket, settlement.cost, settlement.request_id, now_ms)


def settle_many(settlements: list[Settlement], now_ms: int) -> None:
    """Settle several finished calls in Redis and append their records, from a thread (the
    journal's replay), in one pipeline (one per shard on a cluster). With Redis only
    (`in_redis`); raises what a Redis that is down raises."""
    _redis().hand_off_many(settlements, now_ms)


def released(settlement: Settlement) -> Settlement:
    """The release of a call's reservation: its settle with no charge and no record, which takes
    the reservation off and adds nothing, neither to the unposted charges nor to the key's spend
    (a journaled call whose charge the ledger has already). A call that ends without a cost is
    released by its settle alike (cost 0, its record appended)."""
    return replace(settlement, cost=0, payload=b"")


def hold(settlement: Settlement, now_ms: int) -> None:
    """Hold a journaled call's charge in this process's own store until the ledger has it, so
    that calls admitted here while Redis is down count it (holding one already held changes
    nothing)."""
    local_store().hold(settlement.org_id, settlement.request_id, settlement.cost, now_ms)


def mark(intent: Intent, ttl_ms: int) -> asyncio.Future[Any]:
    """Hold a stream's intent with its reservation in Redis (nothing if that is no longer held),
    sent with the other scripts of this turn of the event loop; `sweep_abandoned` settles the
    reservation from it if its process dies. With Redis only (`in_redis`)."""
    return _redis().mark(intent, ttl_ms)


# What admission holds, and what the ledger tells it ---------------------------------------------


def open_reservations(org_id: int, now_ms: int) -> dict[str, int]:
    """The shared store's reservations of calls in flight, by id."""
    return store().open_reservations(org_id, now_ms)


def unposted(org_id: int) -> dict[str, int]:
    """The shared store's settled charges not yet in the ledger, by request id."""
    return store().unposted(org_id)


def sync_balance(org_id: int, balance: int, entry_id: int) -> None:
    """The ledger's balance after entry_id, told to the shared store (kept if newer than the one
    it holds)."""
    store().sync_balance(org_id, balance, entry_id)


def charges_posted(posted: list[Posted]) -> None:
    """Charges the ledger now holds (no longer held as unposted) and the balances after them,
    told to the shared store and to this process's own when it has admitted calls of that
    organization (it is the fallback while Redis is unreachable). Never raises: what is not
    announced now, admission reconciles from the ledger."""
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


def mirror_backlogs(org_ids: Iterable[int]) -> None:
    """What Redis holds against each organization's balance now (its unposted charges and open
    reservations), held by this process's own store, which counts it when Redis stops
    answering. With Redis only (`in_redis`); raises what a Redis that is down raises."""
    read_ms = _monotonic_ms()
    local_store().mirror(backlogs(_redis().sync, org_ids), read_ms)
