"""Admitting a call before it is tried: its key's rate limit and a reservation of its worst
cost against the organization's available credit (and the key's own credit limit)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import DatabaseError
from redis.exceptions import RedisError

from billing.admission import NeedBalance, NeedKeySpend, RateState, Refused, Ticket
from billing.admission.base import AdmitRequest
from billing.admission.select import admission_store, local_store, store
from billing.admission.sync import key_tag, load_balance, load_key_spend
from billing.breaker import maybe_carried_out
from billing.cost import from_units, to_units
from gateway import dbthread
from gateway.caller import Caller
from gateway.errors import GatewayError

log = logging.getLogger(__name__)

# Renewals under way, held so that a task is not collected before it ends.
_renewing: set[asyncio.Task[None]] = set()


def _rate_limit(caller: Caller) -> int:
    if caller.key is not None and caller.key.rate_limit:
        return caller.key.rate_limit
    return settings.MOMOR_RATE_LIMIT_PER_MINUTE


def _request(caller: Caller, request_id: str, amount: Decimal) -> AdmitRequest:
    key = caller.key
    limit = key.credit_limit if key is not None else None
    return AdmitRequest(
        reservation_id=request_id,
        org_id=caller.org.id,
        key_tag=key_tag(key.id if key else None, caller.user_id),
        amount=max(to_units(amount), 0),  # one below zero would add to the available credit
        rate_limit=_rate_limit(caller),
        key_credit_limit=to_units(limit) if limit is not None else None,
        now_ms=int(time.time() * 1000),
        ttl_ms=settings.MOMOR_RESERVATION_TTL_SECONDS * 1000,
    )


async def admit(caller: Caller, request_id: str, amount: Decimal) -> Ticket:
    request = _request(caller, request_id, amount)
    chosen, in_doubt = admission_store(), False
    for _ in range(5):
        try:
            ticket = await chosen.admit(request)
            return replace(ticket, in_doubt=True) if in_doubt else ticket
        except NeedBalance:
            await dbthread.lookup(partial(load_balance, caller.org.id, chosen))
        except NeedKeySpend:
            key_id = caller.key.id if caller.key else 0
            await dbthread.lookup(partial(load_key_spend, caller.org.id, key_id, chosen))
        except Refused as refused:
            raise refusal(refused, amount) from None
        except RedisError as exc:
            log.warning("Redis unreachable (%s): admitting on this process's own counters", exc)
            chosen, in_doubt = local_store(), maybe_carried_out(exc)
        except DatabaseError:
            break
    raise GatewayError(503, "Momor cannot check credits right now.", type="server_error")


async def count_refused(caller: Caller) -> RateState:
    """A call refused after its key was known still counts against the key's window."""
    limit = _rate_limit(caller)
    if limit <= 0:
        return RateState()
    tag = key_tag(caller.key.id if caller.key else None, caller.user_id)
    try:
        return await admission_store().count(caller.org.id, tag, limit, int(time.time() * 1000))
    except RedisError:
        return await local_store().count(caller.org.id, tag, limit, int(time.time() * 1000))


def refusal(refused: Refused, amount: Decimal) -> GatewayError:
    headers = refused.rate.headers()
    if refused.reason == "rate":
        wait = max((refused.rate.reset or 0) - int(time.time()), 1)
        return GatewayError(
            429,
            f"Too many requests: this key may make {refused.rate.limit} a minute. "
            f"Retry after {wait} seconds.",
            type="rate_limit_error",
            code="rate_limit_exceeded",
            headers=headers | {"Retry-After": str(wait)},
        )
    if refused.reason == "key_credits":
        message = "This key has reached its credit limit."
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
    held = store() if ticket.shared else local_store()
    ttl_ms = settings.MOMOR_RESERVATION_TTL_SECONDS * 1000
    try:
        renewed = await held.renew(ticket, int(time.time() * 1000), ttl_ms)
    except RedisError as exc:
        log.warning("could not renew the reservation of call %s (%s)", ticket.id, exc)
        return
    if not renewed:
        log.warning("the reservation of call %s expired before it was renewed", ticket.id)
