"""Operators' postings of credits (top-ups, adjustments, refunds), each under an idempotency
key of the operator's own when one is given: a retried posting posts once, a replay answers
with the first entry, and the same key with another amount or kind is refused. The key is
stored with the entry as `op:<organization id>:<key>`, so it is unique per organization and
never meets the charges' `charge:<request id>`."""

from __future__ import annotations

from decimal import Decimal

from billing.ledger.posting import ledger_post
from billing.models import EntryKind, LedgerEntry

KEY_MAX = 64


class CreditsError(Exception):
    """A posting refused: its message says why, for the operator."""


def operator_key(organization_id: int, key: str) -> str:
    if not key or len(key) > KEY_MAX or not key.isprintable():
        raise CreditsError(f"an idempotency key is 1 to {KEY_MAX} printable characters")
    return f"op:{organization_id}:{key}"


def credits_post(
    *,
    organization_id: int,
    kind: EntryKind,
    amount: Decimal,
    note: str = "",
    idempotency_key: str | None = None,
    created_by_id: int | None = None,
) -> tuple[LedgerEntry, bool]:
    """The entry, and whether it was posted now (False: a replay of its idempotency key)."""
    stored = operator_key(organization_id, idempotency_key) if idempotency_key else None
    first = credits_replayed(stored, kind=kind, amount=amount)
    if first is not None:
        return first, False
    entry = ledger_post(
        organization_id=organization_id,
        kind=kind,
        amount=amount,
        note=note,
        idempotency_key=stored,
        created_by_id=created_by_id,
    )
    if entry is None:  # a retry of the same key posted it between the look and the post
        first = credits_replayed(stored, kind=kind, amount=amount)
        assert first is not None  # noqa: S101 - None comes only when the key is posted
        return first, False
    return entry, True


def credits_replayed(stored: str | None, *, kind: EntryKind, amount: Decimal) -> LedgerEntry | None:
    """The entry posted already under this stored key, if the posting is the same."""
    if stored is None:
        return None
    first = LedgerEntry.objects.filter(idempotency_key=stored).first()
    if first is not None and (first.kind, first.amount) != (kind, amount):
        key = stored.split(":", 2)[2]
        raise CreditsError(
            f"the idempotency key {key!r} posted entry {first.pk} ({first.kind}, "
            f"{first.amount.normalize():f} USD); this posting is not the same"
        )
    return first
