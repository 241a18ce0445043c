"""Storing many calls together, as `generation_store` stores each: one query finds those stored
already, the generations and their attempts go in bulk inserts (COPY on PostgreSQL), the daily
usage is summed per slot, each organization's charges are posted in one pass over its balance
and each key used is touched once. A record the database refuses fails them all: the caller
stores them one by one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from accounts.models import ApiKey
from billing.calls.cost import to_units
from billing.calls.records import CallRecord
from billing.ledger.posting import Posting, charge_key, ledger_post_many
from billing.models import EntryKind, Generation, LedgerEntry
from billing.retention.dropped import dropped_among
from billing.storing.generations import (
    CallCharge,
    Stored,
    attempt_rows,
    call_charge,
    charge_note,
    generation_row,
)
from billing.usage.rollups import rollups_add
from core.row_copy import rows_insert

Charge = tuple[int, int]
"""A charge's ledger entry id and the balance after it."""
Priced = tuple[CallRecord, CallCharge]


def batch_store(records: Sequence[CallRecord]) -> list[Stored]:
    """Store calls, their attempts and their charges in the caller's transaction (call it in a
    savepoint), one Stored each in the order given; a call stored already, or earlier in
    `records`, is left as it is. Charges are posted in the order given. Raises what the
    database raised if it refuses any of them, having stored none."""
    charges = _posted_charges(records)
    new = _new(records, _stored_already(records))
    generations = rows_insert([generation_row(r, charge) for r, charge in new])
    rows_insert(
        [
            row
            for g, (r, charge) in zip(generations, new, strict=True)
            for row in attempt_rows(g, r, charge)
        ]
    )
    rollups_add(generations)
    charges.update(_charges_post(new, generations, charges))
    _keys_touch([record for record, _ in new])
    made = {generation.request_id: generation for generation in generations}
    return [
        Stored(
            r.organization_id,
            r.request_id,
            made.pop(r.request_id, None),
            charges.get(charge_key(r.request_id)),
        )
        for r in records
    ]


def _stored_already(records: Sequence[CallRecord]) -> set[str]:
    """The calls stored before: their generations, or the ids of those the retention dropped
    (one query)."""
    ids = {record.request_id for record in records}
    found = Generation.objects.filter(request_id__in=ids).order_by().values_list("request_id")
    return {request_id for (request_id,) in found.union(dropped_among(ids))}


def _posted_charges(records: Sequence[CallRecord]) -> dict[str, Charge]:
    """The charges posted already (of calls stored before, or parked), by idempotency key."""
    keys = {charge_key(record.request_id) for record in records}
    rows = LedgerEntry.objects.filter(idempotency_key__in=keys).order_by()
    found = rows.values_list("idempotency_key", "id", "balance_after")
    return {str(key): (pk, to_units(balance)) for key, pk, balance in found}


def _new(records: Sequence[CallRecord], stored: set[str]) -> list[Priced]:
    """The calls to store, each once, with their cost."""
    seen, new = set(stored), []
    for record in records:
        if record.request_id not in seen:
            seen.add(record.request_id)
            new.append((record, call_charge(record)))
    return new


def _charges_post(
    new: list[Priced], generations: Sequence[Generation], posted: dict[str, Charge]
) -> dict[str, Charge]:
    postings = [
        Posting(
            organization_id=record.organization_id,
            kind=EntryKind.CHARGE,
            amount=-charge.cost,
            note=charge_note(record),
            idempotency_key=charge_key(record.request_id),
            generation_id=generation.pk,
            api_key_id=record.api_key_id,
        )
        for (record, charge), generation in zip(new, generations, strict=True)
        if charge.cost > 0 and charge_key(record.request_id) not in posted
    ]
    entries = ledger_post_many(postings)
    return {
        str(posting.idempotency_key): (entry.pk, to_units(entry.balance_after))
        for posting, entry in zip(postings, entries, strict=True)
    }


def _keys_touch(records: list[CallRecord]) -> None:
    """Each key's `last_used_at` is its last call's moment, one update a key, in id order."""
    last: dict[int, datetime] = {}
    for record in records:
        if record.api_key_id is not None:
            last[record.api_key_id] = record.created_at
    for key in sorted(last):
        ApiKey.objects.filter(pk=key).update(last_used_at=last[key])
