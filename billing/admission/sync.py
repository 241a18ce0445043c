"""Admission's view of the ledger: balances loaded when first needed, and every few seconds
brought up to date (top-ups made elsewhere, charges whose announcement was lost)."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db.models import Max, Sum

from accounts.models import Organization
from billing.admission.backlog import backlogs
from billing.admission.base import AdmissionStore
from billing.admission.redis_store import RedisStore
from billing.admission.select import local_store, store
from billing.breaker import REDIS, REDIS_DOWN
from billing.cost import to_units
from billing.models import DailyRollup, LedgerEntry

log = logging.getLogger(__name__)


def load_balance(org_id: int, into: AdmissionStore | None = None) -> None:
    target = into or store()
    entry = (
        LedgerEntry.objects.filter(organization_id=org_id)
        .order_by("-id")
        .values("id", "balance_after")
        .first()
    )
    if entry is None:
        balance = Organization.objects.values_list("balance", flat=True).get(pk=org_id)
        target.sync_balance(org_id, to_units(balance), 0)
    else:
        target.sync_balance(org_id, to_units(entry["balance_after"]), entry["id"])


def load_key_spend(org_id: int, key_id: int, into: AdmissionStore | None = None) -> None:
    spent = DailyRollup.objects.filter(api_key_id=key_id).aggregate(s=Sum("cost"))["s"]
    (into or store()).set_key_spend(org_id, key_tag(key_id), to_units(spent or Decimal(0)))


def key_tag(key_id: int | None, user_id: int | None = None) -> str:
    return f"k{key_id}" if key_id is not None else f"u{user_id}"


def admission_sync(org_ids: list[int], *, reconcile: bool) -> None:
    """Push each organization's latest ledger balance to admission; with `reconcile`, also
    clear unposted charges that are in the ledger (their announcement was lost). Both stores
    are kept current: the shared one, and this process's own, which admits calls while Redis
    is unreachable and must not do so against the balance of the last outage, nor without
    what Redis held then (its backlog, mirrored here while Redis answers)."""
    latest = _latest_balances(org_ids)
    shared, own = store(), local_store()
    _sync(own, latest, org_ids, reconcile=reconcile)
    if not isinstance(shared, RedisStore) or not REDIS.allow():
        return
    try:
        _sync(shared, latest, org_ids, reconcile=reconcile)
        own.mirror(backlogs(shared.sync, org_ids))
    except REDIS_DOWN:
        REDIS.failed()
        log.warning("admission sync skipped: Redis unreachable")
    else:
        REDIS.succeeded()


def _latest_balances(org_ids: list[int]) -> list[tuple[int, int, int]]:
    """(organization id, balance, ledger entry id) of each organization's last entry."""
    latest = (
        LedgerEntry.objects.filter(organization_id__in=org_ids)
        .values("organization_id")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    entries = LedgerEntry.objects.filter(id__in=list(latest)).values(
        "id", "organization_id", "balance_after"
    )
    return [(e["organization_id"], to_units(e["balance_after"]), e["id"]) for e in entries]


def _sync(
    target: AdmissionStore,
    latest: list[tuple[int, int, int]],
    org_ids: list[int],
    *,
    reconcile: bool,
) -> None:
    for org_id, balance, entry_id in latest:
        target.sync_balance(org_id, balance, entry_id)
    if reconcile:
        for org_id in org_ids:
            _reconcile(target, org_id)


RECONCILE_BATCH = 500


def _reconcile(target: AdmissionStore, org_id: int) -> None:
    """Only the oldest unposted charges are read: while the workers lag, the unposted set holds
    every call not yet stored, and reading it whole every few seconds cost each gateway
    process memory in proportion to the backlog."""
    held = target.oldest_unposted(org_id, RECONCILE_BATCH)
    if not held:
        return
    keys = {f"charge:{rid}": rid for rid in held}
    entries = LedgerEntry.objects.filter(idempotency_key__in=list(keys)).values_list(
        "idempotency_key", "id", "balance_after"
    )
    for key, entry_id, balance_after in entries:
        if key is not None:  # never: the filter matched it
            target.posted(org_id, keys[key], to_units(balance_after), entry_id)
