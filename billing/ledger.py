"""The credits ledger: every movement is one entry, and the organization's balance moves with it
in the same transaction, so the balance is read without summing and always equals the sum."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F, Sum

from accounts.models import Organization
from billing.admission import store
from billing.cost import to_units
from billing.models import EntryKind, LedgerEntry

log = logging.getLogger(__name__)


def ledger_post(
    *,
    organization_id: int,
    kind: EntryKind,
    amount: Decimal,
    note: str = "",
    idempotency_key: str | None = None,
    generation_id: int | None = None,
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
                created_by_id=created_by_id,
            )
            if announce:
                transaction.on_commit(lambda: _announce(organization_id, balance, entry.pk))
            return entry
    except IntegrityError:
        if idempotency_key and LedgerEntry.objects.filter(idempotency_key=idempotency_key).exists():
            return None
        raise


def _announce(organization_id: int, balance: Decimal, entry_id: int) -> None:
    """Admission learns the new balance at once (else within its next refresh)."""
    try:
        store().sync_balance(organization_id, to_units(balance), entry_id)
    except Exception:
        log.warning("could not announce a ledger balance to admission")


def ledger_sum(organization_id: int) -> Decimal:
    total = LedgerEntry.objects.filter(organization_id=organization_id).aggregate(s=Sum("amount"))
    return total["s"] or Decimal(0)
