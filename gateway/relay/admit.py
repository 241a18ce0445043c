"""Admitting a call before it is tried: its key's rate limit and a reservation of its worst
cost against the organization's available credit and every limit that covers the call (its
key's credit limit, its budgets: `gateway.relay.budgets`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import DatabaseError
from redis.exceptions import RedisError

from billing.admission import operations
from billing.admission.operations import (
    AdmissionStore,
    AdmitRequest,
    NeedBalance,
    NeedSpend,
    RateState,
    Refused,
    Ticket,
    admission_store,
    local_store,
)
from billing.calls.cost import from_units, to_units
from billing.ledger.admission_sync import key_tag, load_balance, load_spends
from core import dbthread
from core.breaker import maybe_carried_out
from gateway.relay.budgets import Covering, covering, limits, meters_named, refusal_message
from gateway.request.errors import GatewayError
from gateway.request.identity import Caller

log = logging.getLogger(__name__)

# Renewals under way, held so that a task is not collected before it ends.
_renewing: set[asyncio.Task[None]] = set()
# Loads from the database under way, by what they load: the calls that need the same one
# (a burst on a key seen for the first time) wait for it together.
_loading: dict[tuple[object, ...], asyncio.Future[None]] = {}


def _rate_limit(caller: Caller) -> int:
    if caller.key is not None and caller.key.rate_limit:
        return caller.key.rate_limit
    return settings.MOMOR_RATE_LIMIT_PER_MINUTE


def _request(
    caller: Caller, request_id: str, amount: Decimal, found: tuple[Covering, ...], now_ms: int
) -> AdmitRequest:
    key = caller.key
    return AdmitRequest(
        reservation_id=request_id,
        org_id=caller.org.id,
        key_tag=key_tag(key.id if key else None, caller.user_id),
        amount=max(to_units(amount), 0),  # one below zero would add to the available credit
        rate_limit=_rate_limit(caller),
        now_ms=now_ms,
        ttl_ms=settings.MOMOR_RESERVATION_TTL_SECONDS * 1000,
        limits=limits(found),
    )


async def admit(caller: Caller, request_id: str, amount: Decimal) -> Ticket:
    now = time.time()
    found = covering(caller, datetime.fromtimestamp(now, UTC))
    request = _request(caller, request_id, amount, found, int(now * 1000))
    chosen, in_doubt = admission_store(), False
    for _ in range(5):
        try:
            ticket = await operations.admit(request, chosen)
            return replace(ticket, in_doubt=True) if in_doubt else ticket
        except (NeedBalance, NeedSpend) as missing:
            await _load(caller, chosen, missing, found)
        except Refused as refused:
            raise refusal(refused, amount, found) from None
        except RedisError as exc:
            log.warning("Redis unreachable (%s): admitting on this process's own counters", exc)
            chosen, in_doubt = local_store(), maybe_carried_out(exc)
    raise _cannot_check()


async def _load(
    caller: Caller, into: AdmissionStore, missing: Exception, found: tuple[Covering, ...]
) -> None:
    """Load what the store lacks from the database. It runs inside the admit loop's `except`
    clause, where that loop's other handlers do not apply: a database error here (PostgreSQL
    down, or not answering in time) is the 503 of a credit that cannot be checked."""
    org_id = caller.org.id
    what: tuple[object, ...]
    if isinstance(missing, NeedSpend):
        meters = meters_named(found, missing.meters)
        load, what = partial(load_spends, org_id, meters, into), ("spend", org_id, *meters)
    else:
        load, what = partial(load_balance, org_id, into), ("balance", org_id)
    try:
        await asyncio.shield(_shared_load(load, (asyncio.get_running_loop(), into, *what)))
    except DatabaseError:
        raise _cannot_check() from None
    except RedisError as exc:  # the store's next admit meets it too, and moves to our own
        log.warning("Redis unreachable while loading credit (%s)", exc)


def _shared_load(load: partial[None], what: tuple[object, ...]) -> asyncio.Future[None]:
    """The load under way for `what`, else a new one."""
    pending = _loading.get(what)
    if pending is None:
        pending = _loading[what] = asyncio.ensure_future(dbthread.lookup(load))
        pending.add_done_callback(partial(_loaded, what))
    return pending


def _loaded(what: tuple[object, ...], done: asyncio.Future[None]) -> None:
    del _loading[what]
    if not done.cancelled():
        done.exception()  # retrieved: each waiter has it, and one that left does not need it


def _cannot_check() -> GatewayError:
    return GatewayError(503, "Momor cannot check credits right now.", type="server_error")


async def count_refused(caller: Caller) -> RateState:
    """A call refused after its key was known still counts against the key's window."""
    limit = _rate_limit(caller)
    if limit <= 0:
        return RateState()
    tag = key_tag(caller.key.id if caller.key else None, caller.user_id)
    return await operations.count(caller.org.id, tag, limit)


def refusal(refused: Refused, amount: Decimal, found: tuple[Covering, ...]) -> GatewayError:
    headers = refused.rate.headers()
    if refused.reason == "rate":
        now = refused.now_ms // 1000 if refused.now_ms is not None else int(time.time())
        wait = max((refused.rate.reset or 0) - now, 1)
        return GatewayError(
            429,
            f"Too many requests: this key may make {refused.rate.limit} a minute. "
            f"Retry after {wait} seconds.",
            type="rate_limit_error",
            code="rate_limit_exceeded",
            headers=headers | {"Retry-After": str(wait)},
        )
    if refused.reason == "budget":
        message = refusal_message(found, refused.meter, amount)
    else:
        message = (
            f"Insufficient credits: this call may cost up to ${from_units(to_units(amount))} "
            "and the organization's available credit does not cover it."
        )
    return GatewayError(
        402, message, type="insufficient_quota", code="insufficient_credits", headers=headers
    )


class Renewal:
    """Keeps a long call's reservation held while it runs: every third of the reservation's
    time to live, it is renewed from a task of its own, so the call never waits on the store.
    `tick` is cheap (one clock read) and made on each read of a stream and before each try."""

    def __init__(self, ticket: Ticket | None, since: float) -> None:
        self.ticket = ticket
        self.every = settings.MOMOR_RESERVATION_TTL_SECONDS / 3
        self.due = since + self.every

    def tick(self) -> None:
        now = time.monotonic()
        if self.ticket is None or now < self.due:
            return
        self.due = now + self.every
        task = asyncio.get_running_loop().create_task(_renew(self.ticket))
        _renewing.add(task)
        task.add_done_callback(_renewing.discard)


async def _renew(ticket: Ticket) -> None:
    ttl_ms = settings.MOMOR_RESERVATION_TTL_SECONDS * 1000
    try:
        renewed = await operations.renew(ticket, ttl_ms)
    except RedisError as exc:
        log.warning("could not renew the reservation of call %s (%s)", ticket.id, exc)
        return
    if not renewed:
        log.warning("the reservation of call %s expired before it was renewed", ticket.id)
