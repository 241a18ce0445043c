"""Refunding a charged call: a `refund` entry on its organization's ledger, at most what the
call was charged, over every refund of it together. The balance and admission's available
credit move with it as with a top-up (`ledger_post` announces it)."""

from __future__ import annotations

from decimal import Decimal
from hashlib import sha256
from uuid import uuid4

from django.db import transaction
from django.db.models import Sum

from accounts.models import Organization
from billing.ledger.credits import KEY_MAX, CreditsError
from billing.ledger.posting import charge_key, ledger_post
from billing.models import EntryKind, LedgerEntry
from core.formatting import format_usd

REQUEST_ID_MAX = 64


def refund_key(request_id: str, key: str) -> str:
    """`refund:<request id>:<digest of the key>`: every refund of a call under one prefix,
    within the column's 100 characters."""
    if not key or len(key) > KEY_MAX or not key.isprintable():
        raise CreditsError(f"an idempotency key is 1 to {KEY_MAX} printable characters")
    return f"refund:{request_id}:{sha256(key.encode()).hexdigest()[:16]}"


def call_refund(
    *,
    request_id: str,
    amount: Decimal | None = None,
    note: str = "",
    idempotency_key: str | None = None,
    created_by_id: int | None = None,
) -> tuple[LedgerEntry, bool]:
    """Refund `amount` of the call's charge (None: all that is not refunded yet). The entry,
    and whether it was posted now (False: a replay of its idempotency key)."""
    if not 0 < len(request_id) <= REQUEST_ID_MAX or not request_id.isprintable():
        raise CreditsError(f"a request id is 1 to {REQUEST_ID_MAX} printable characters")
    if "\x00" in note:
        raise CreditsError("a note holds no NUL character")
    charge = LedgerEntry.objects.filter(idempotency_key=charge_key(request_id)).first()
    if charge is None:
        raise CreditsError(f"call {request_id!r} has no charge in the ledger")
    stored = refund_key(request_id, idempotency_key or uuid4().hex)
    with transaction.atomic():
        # The organization's row, locked, makes the refunds of its calls one at a time.
        Organization.objects.select_for_update().filter(pk=charge.organization_id).first()
        first = LedgerEntry.objects.filter(idempotency_key=stored).first()
        if first is not None:
            if amount is not None and first.amount != amount:
                raise CreditsError(_not_the_same(first))
            return first, False
        entry = ledger_post(
            organization_id=charge.organization_id,
            kind=EntryKind.REFUND,
            amount=_refundable(charge, request_id, amount),
            note=note or f"refund of call {request_id}",
            idempotency_key=stored,
            generation_id=charge.generation_id,
            created_by_id=created_by_id,
        )
    assert entry is not None  # noqa: S101 - the lock keeps the key unposted
    return entry, True


def _refundable(charge: LedgerEntry, request_id: str, amount: Decimal | None) -> Decimal:
    refunds = LedgerEntry.objects.filter(
        organization_id=charge.organization_id,
        kind=EntryKind.REFUND,
        idempotency_key__startswith=f"refund:{request_id}:",
    )
    left = -charge.amount - (refunds.aggregate(s=Sum("amount"))["s"] or Decimal(0))
    if left <= 0:
        raise CreditsError(f"call {request_id} is refunded in full already")
    if amount is None:
        return left
    if amount <= 0 or amount > left:
        raise CreditsError(
            f"a refund of call {request_id} is more than nothing and at most {format_usd(left)} "
            f"(charged {format_usd(-charge.amount)}), not {format_usd(amount)}"
        )
    return amount


def _not_the_same(first: LedgerEntry) -> str:
    return (
        f"this idempotency key posted entry {first.pk} (a refund of "
        f"{format_usd(first.amount)}); this refund is not the same"
    )
