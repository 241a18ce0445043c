"""Storing a finished call: its generation, its attempts and its charge, together, exactly
once per request id however often it is delivered (even after the retention dropped it)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction

from accounts.models import ApiKey
from billing.calls.cost import ZERO, call_cost, from_units, to_units
from billing.calls.records import AttemptRecord, CallRecord
from billing.ledger.posting import charge_key, ledger_post
from billing.models import API_CHARS, Attempt, EntryKind, Generation, LedgerEntry
from billing.retention.dropped import dropped_among
from billing.usage.rollups import rollup_add


@dataclass(frozen=True, slots=True)
class CallCharge:
    """What a call is charged: each attempt's charge, in the order tried, and their sum."""

    cost: Decimal
    attempts: tuple[Decimal, ...]
    capped: bool
    """An attempt's usage cost more than the call's reservation, and was charged that."""


def call_charge(record: CallRecord) -> CallCharge:
    """The one place a call's charge is computed. Every attempt with tokens is charged for them
    at its prices, on its key: the one that served and any whose answer Momor rejected after
    the provider generated it (a failure before output has no tokens, and costs nothing).
    No attempt is charged more than the call's reservation, the worst case of any candidate."""
    bound = from_units(record.ticket.amount) if record.ticket is not None else None
    costs, capped = [], False
    for attempt in record.attempts:
        cost = _attempt_cost(attempt)
        if bound is not None and cost > bound:
            cost, capped = bound, True
        costs.append(cost)
    return CallCharge(sum(costs, ZERO), tuple(costs), capped)


def _attempt_cost(attempt: AttemptRecord) -> Decimal:
    if attempt.tokens is None:
        return ZERO
    return call_cost(attempt.tokens, attempt.prices, attempt.key_source, attempt.fee)


def served_cost(record: CallRecord) -> Decimal:
    """What the organization is charged for the call: the sum of its attempts' charges."""
    return call_charge(record).cost


def _served_attempt(record: CallRecord) -> AttemptRecord | None:
    if not record.attempts or not record.model:
        return None
    last = record.attempts[-1]
    return last if last.tokens is not None else None


@dataclass(slots=True)
class Stored:
    """A record that reached the database (as a generation, or parked), and what admission and
    the live feed are told once its transaction commits."""

    organization_id: int
    request_id: str
    generation: Generation | None = None
    charge: tuple[int, int] | None = None
    """The charge's ledger entry id and the balance after it, when the charge is posted."""


def generation_store(record: CallRecord) -> Stored:
    """Store one call, its attempts and its charge, in the caller's transaction; a call stored
    already is left as it is. Raises what the database raised for a record it refuses."""
    stored = Stored(record.organization_id, record.request_id)
    if not _stored_before(record.request_id):
        try:
            with transaction.atomic():
                return _create(record, stored)
        except IntegrityError:
            # stored meanwhile by another consumer; anything else is the record's own fault
            if not Generation.objects.filter(request_id=record.request_id).exists():
                raise
    stored.charge = posted_charge(record.request_id)
    return stored


def _stored_before(request_id: str) -> bool:
    """Its generation is stored, or was and the retention dropped it."""
    return (
        Generation.objects.filter(request_id=request_id).exists()
        or dropped_among([request_id]).exists()
    )


def _create(record: CallRecord, stored: Stored) -> Stored:
    charge = call_charge(record)
    cost = charge.cost
    generation = stored.generation = Generation.objects.create(**_generation_fields(record, charge))
    Attempt.objects.bulk_create(attempt_rows(generation, record, charge))
    rollup_add(generation)
    if cost > 0:
        entry = ledger_post(
            organization_id=record.organization_id,
            kind=EntryKind.CHARGE,
            amount=-cost,
            note=charge_note(record),
            idempotency_key=charge_key(record.request_id),
            generation_id=generation.pk,
            api_key_id=record.api_key_id,
            announce=False,
        )
        if entry is not None:
            stored.charge = (entry.pk, to_units(entry.balance_after))
    if record.api_key_id is not None:
        ApiKey.objects.filter(pk=record.api_key_id).update(last_used_at=record.created_at)
    stored.charge = stored.charge or posted_charge(record.request_id)
    return stored


def charge_note(record: CallRecord) -> str:
    if not record.model:
        return "answers rejected by Momor"
    return f"{record.model} via {record.provider}"[:300]


def posted_charge(request_id: str) -> tuple[int, int] | None:
    """The ledger entry of a call's charge and the balance after it, if it is posted."""
    entry = (
        LedgerEntry.objects.filter(idempotency_key=charge_key(request_id))
        .values("id", "balance_after")
        .first()
    )
    return None if entry is None else (entry["id"], to_units(entry["balance_after"]))


def generation_row(record: CallRecord, charge: CallCharge) -> Generation:
    """The call's generation, not yet saved, charged `charge`."""
    return Generation(**_generation_fields(record, charge))


def _generation_fields(record: CallRecord, charge: CallCharge) -> dict[str, object]:
    served = _served_attempt(record)
    return {
        "request_id": record.request_id,
        "organization_id": record.organization_id,
        "api_key_id": record.api_key_id,
        "user_id": record.user_id,
        "selectors": record.selectors,
        "api": record.api[:API_CHARS],
        "model": record.model,
        "provider": record.provider,
        "streamed": record.streamed,
        "status": record.status,
        "http_status": record.http_status,
        "error": record.error,
        "finish_reason": record.finish_reason[:40],
        "native_finish_reason": record.native_finish_reason[:80],
        "prompt_tokens": record.tokens.prompt,
        "completion_tokens": record.tokens.completion,
        "cached_tokens": record.tokens.cached,
        "cache_write_tokens": record.tokens.cache_write,
        "reasoning_tokens": record.tokens.reasoning,
        "usage_estimated": record.tokens.estimated,
        "cost": charge.cost,
        "charge_capped": charge.capped,
        "prices": served.prices if served else {},
        "latency_ms": record.latency_ms,
        "first_token_ms": record.first_token_ms,
        "client_request_id": record.client_request_id[:128],
        "session_id": record.session_id[:256],
        "app": record.app[:2048],
        "referer": record.referer[:2048],
        "routing": record.routing if any(record.routing.values()) else {},
        "trace_id": record.trace_id[:32],
        "created_at": record.created_at,
    }


def attempt_rows(generation: Generation, record: CallRecord, charge: CallCharge) -> list[Attempt]:
    """The call's attempts, not yet saved, for its generation once saved, each charged its
    part of `charge`."""
    return [
        _attempt_row(generation, attempt, cost)
        for attempt, cost in zip(record.attempts, charge.attempts, strict=True)
    ]


def _attempt_row(generation: Generation, attempt: AttemptRecord, cost: Decimal) -> Attempt:
    tokens = attempt.tokens
    return Attempt(
        generation=generation,
        created_at=generation.created_at,
        position=attempt.position,
        model=attempt.model,
        provider=attempt.provider,
        region=attempt.region,
        upstream_id=attempt.upstream_id,
        key_source=attempt.key_source,
        http_status=attempt.http_status,
        error=attempt.error,
        latency_ms=attempt.latency_ms,
        first_token_ms=attempt.first_token_ms,
        prompt_tokens=tokens.prompt if tokens else 0,
        completion_tokens=tokens.completion if tokens else 0,
        cost=cost,
        prices=attempt.prices,
    )
