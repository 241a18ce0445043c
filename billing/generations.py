"""Storing a finished call: its generation, its attempts and its charge, in one transaction,
exactly once per request id however often it is delivered."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction

from accounts.models import ApiKey
from billing.admission import store
from billing.cost import call_cost, to_units
from billing.ledger import ledger_post
from billing.live import publish_generation
from billing.models import Attempt, EntryKind, Generation, LedgerEntry
from billing.records import AttemptRecord, CallRecord

log = logging.getLogger(__name__)


def served_cost(record: CallRecord) -> Decimal:
    """What the organization is charged: the served attempt's tokens at its prices (a call
    that failed before output costs nothing)."""
    served = _served_attempt(record)
    if served is None or served.tokens is None:
        return Decimal(0)
    return call_cost(served.tokens, served.prices, served.key_source)


def _served_attempt(record: CallRecord) -> AttemptRecord | None:
    if not record.attempts or not record.model:
        return None
    last = record.attempts[-1]
    return last if last.tokens is not None else None


def generation_record(record: CallRecord) -> Generation:
    """Store one call, its attempts and its charge; a call already stored is left as it is."""
    generation = Generation.objects.filter(request_id=record.request_id).first()
    if generation is None:
        try:
            generation = _create(record)
        except IntegrityError:
            generation = Generation.objects.get(request_id=record.request_id)
        else:
            publish_generation(generation)
    _announce_charge(generation)
    return generation


@transaction.atomic
def _create(record: CallRecord) -> Generation:
    cost = served_cost(record)
    generation = Generation.objects.create(**_generation_fields(record, cost))
    Attempt.objects.bulk_create(_attempt_row(generation, a) for a in record.attempts)
    if cost > 0:
        ledger_post(
            organization_id=record.organization_id,
            kind=EntryKind.CHARGE,
            amount=-cost,
            note=f"{record.model} via {record.provider}",
            idempotency_key=charge_key(record.request_id),
            generation_id=generation.pk,
        )
    if record.api_key_id is not None:
        ApiKey.objects.filter(pk=record.api_key_id).update(last_used_at=record.created_at)
    return generation


def charge_key(request_id: str) -> str:
    return f"charge:{request_id}"


def _announce_charge(generation: Generation) -> None:
    """Tell admission the charge is in the ledger, so it stops holding it as unposted."""
    entry = (
        LedgerEntry.objects.filter(idempotency_key=charge_key(generation.request_id))
        .values("id", "balance_after")
        .first()
    )
    if entry is None:
        return
    try:
        store().posted(
            generation.organization_id,
            generation.request_id,
            to_units(entry["balance_after"]),
            entry["id"],
        )
    except Exception:  # admission reconciles from the ledger on its next refresh
        log.warning("could not announce the charge of %s to admission", generation.request_id)


def _generation_fields(record: CallRecord, cost: Decimal) -> dict[str, object]:
    served = _served_attempt(record)
    return {
        "request_id": record.request_id,
        "organization_id": record.organization_id,
        "api_key_id": record.api_key_id,
        "user_id": record.user_id,
        "selectors": record.selectors,
        "model": record.model,
        "provider": record.provider,
        "streamed": record.streamed,
        "status": record.status,
        "http_status": record.http_status,
        "error": record.error,
        "finish_reason": record.finish_reason,
        "native_finish_reason": record.native_finish_reason,
        "prompt_tokens": record.tokens.prompt,
        "completion_tokens": record.tokens.completion,
        "cached_tokens": record.tokens.cached,
        "cache_write_tokens": record.tokens.cache_write,
        "reasoning_tokens": record.tokens.reasoning,
        "usage_estimated": record.tokens.estimated,
        "cost": cost,
        "prices": served.prices if served else {},
        "latency_ms": record.latency_ms,
        "first_token_ms": record.first_token_ms,
        "created_at": record.created_at,
    }


def _attempt_row(generation: Generation, attempt: AttemptRecord) -> Attempt:
    tokens = attempt.tokens
    cost = call_cost(tokens, attempt.prices, attempt.key_source) if tokens else Decimal(0)
    return Attempt(
        generation=generation,
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
