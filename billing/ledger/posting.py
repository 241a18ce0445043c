"""The credits ledger: every movement is one entry, and the organization's balance moves with it
in the same transaction, so the balance is read without summing and always equals the sum."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F, Sum

from accounts.models import Organization
from billing.admission.operations import sync_balance
from billing.calls.cost import to_units
from billing.models import EntryKind, LedgerEntry
from core.row_copy import rows_insert

log = logging.getLogger(__name__)


def charge_key(request_id: str) -> str:
    """The idempotency key of a call's charge on the ledger."""
    return f"charge:{request_id}"


def ledger_post(
    *,
    organization_id: int,
    kind: EntryKind,
    amount: Decimal,
    note: str = "",
    idempotency_key: str | None = None,
    generation_id: int | None = None,
    api_key_id: int | None = None,
    created_by_id: int | None = None,
    announce: bool = True,
) -> LedgerEntry | None:
    """Post one entry; with an idempotency key already posted, post nothing and return None.
    Admission learns the new balance once the transaction commits, unless the caller tells it
    itself (`announce=False`: the records consumer announces a batch of charges at once)."""
    try:
        with transaction.atomic():
            Organization.objects.filter(pk=organization_id).update(balance=F("balance") + amount)
            balance = Organization.objects.values_list("balance", flat=True).get(pk=organization_id)
            entry = LedgerEntry.objects.create(
                organization_id=organization_id,
                kind=kind,
                amount=amount,
                balance_after=balance,
                note=note,
                idempotency_key=idempotency_key,
                generation_id=generation_id,
                api_key_id=api_key_id,
                created_by_id=created_by_id,
            )
            if announce:
                transaction.on_commit(lambda: _announce(organization_id, balance, entry.pk))
            return entry
    except IntegrityError:
        if idempotency_key and LedgerEntry.objects.filter(idempotency_key=idempotency_key).exists():
            return None
        raise


@dataclass(frozen=True, slots=True)
class Posting:
    """One entry of several posted together (`ledger_post_many`)."""

    organization_id: int
    kind: EntryKind
    amount: Decimal
    note: str = ""
    idempotency_key: str | None = None
    generation_id: int | None = None
    api_key_id: int | None = None


def ledger_post_many(postings: Sequence[Posting]) -> list[LedgerEntry]:
    """Post entries in the order given, in the caller's transaction: each organization's balance
    row is locked once (all of them in id order, as every batch takes them, so two never
    deadlock), its entries' balances after run on from it, and it moves by their sum. An
    idempotency key posted already fails them all with IntegrityError: give keys not yet posted,
    in a savepoint. Admission is not told (the caller announces the batch)."""
    if not postings:
        return []
    balances = _locked_balances({posting.organization_id for posting in postings})
    entries = []
    for posting in postings:
        balances[posting.organization_id] += posting.amount
        entries.append(_entry(posting, balances[posting.organization_id]))
    rows_insert(entries)
    moved = [Organization(pk=org, balance=balance) for org, balance in balances.items()]
    Organization.objects.bulk_update(moved, ["balance"])
    return entries


def _locked_balances(organization_ids: set[int]) -> dict[int, Decimal]:
    rows = Organization.objects.select_for_update(no_key=True).filter(pk__in=organization_ids)
    balances = dict(rows.order_by("pk").values_list("pk", "balance"))
    if len(balances) < len(organization_ids):
        missing = sorted(organization_ids - set(balances))
        raise Organization.DoesNotExist(f"organizations {missing} do not exist")
    return balances


def _entry(posting: Posting, balance_after: Decimal) -> LedgerEntry:
    return LedgerEntry(
        organization_id=posting.organization_id,
        kind=posting.kind,
        amount=posting.amount,
        balance_after=balance_after,
        note=posting.note,
        idempotency_key=posting.idempotency_key,
        generation_id=posting.generation_id,
        api_key_id=posting.api_key_id,
    )


def _announce(organization_id: int, balance: Decimal, entry_id: int) -> None:
    """Admission learns the new balance at once (else within its next refresh)."""
    try:
        sync_balance(organization_id, to_units(balance), entry_id)
    except Exception:
        log.warning("could not announce a ledger balance to admission")


def ledger_sum(organization_id: int) -> Decimal:
    total = LedgerEntry.objects.filter(organization_id=organization_id).aggregate(s=Sum("amount"))
    return total["s"] or Decimal(0)
