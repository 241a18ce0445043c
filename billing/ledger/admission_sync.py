"""Admission's view of the ledger: balances loaded when first needed, and every few seconds
brought up to date (top-ups made elsewhere, charges whose announcement was lost)."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.db.models import Max
from django.utils import timezone

from accounts.models import ApiKey, Budget, BudgetScope, Organization
from accounts.periods import ALL_TIME, Meter, Window
from billing.admission.operations import (
    AdmissionStore,
    KeySpend,
    in_redis,
    local_store,
    mirror_backlogs,
    store,
)
from billing.calls.cost import to_units
from billing.ledger.budget_spend import meter_of, spent
from billing.ledger.posting import charge_key
from billing.models import LedgerEntry
from core.breaker import REDIS, REDIS_DOWN

log = logging.getLogger(__name__)

# Set while this process is off Redis: the first sync that reaches it again brings the keys'
# spend to the ledger at once (the journal stored calls straight into the database meanwhile).
_REDIS_MISSED = threading.Event()


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


def load_spends(org_id: int, meters: list[Meter], into: AdmissionStore | None = None) -> None:
    meter_spends_sync(into or store(), [(org_id, meter) for meter in meters])


def meter_spends_sync(target: AdmissionStore, meters: list[tuple[int, Meter]]) -> None:
    """Each meter's (organization id, meter) spend from the ledger, as the daily usage sums it
    (every posted charge, a parked call's too), plus the charges the store holds for the meter
    that the ledger does not have. The store is read before the ledger: a charge posted in
    between counts twice until the next sync, never not at all."""
    names = [(org_id, meter.name) for org_id, meter in meters]
    held = target.keys_unposted(names)
    posted = _posted({rid for rids in held for rid in rids})
    target.set_key_spends([
        KeySpend(org_id, meter.name, to_units(spent(org_id, meter)),
                 tuple(rid for rid in rids if rid in posted), _expires_ms(meter.window))
        for (org_id, meter), rids in zip(meters, held, strict=True)
    ])  # fmt: skip


def _posted(request_ids: set[str]) -> set[str]:
    """Those of the calls whose charge the ledger has."""
    keys = [charge_key(rid) for rid in request_ids]
    found = LedgerEntry.objects.filter(idempotency_key__in=keys)
    return {key.removeprefix("charge:") for key in found.values_list("idempotency_key", flat=True)
            if key is not None}  # fmt: skip


def _expires_ms(window: Window) -> int:
    """A window's counters are kept a day past its end (calls admitted in it settle into it);
    all time's for good (0)."""
    if window.resets_at is None:
        return 0
    return int((window.resets_at + timedelta(days=1)).timestamp() * 1000)


def limited_meters(org_ids: list[int], now: datetime) -> list[tuple[int, Meter]]:
    """The meters of these organizations that a limit holds now: each key's with a credit limit
    of its own, and each budget's in its current window (a revoked key's left out)."""
    keys = ApiKey.objects.filter(organization_id__in=org_ids, revoked_at__isnull=True)
    limited = keys.filter(credit_limit__isnull=False).values_list("organization_id", "id")
    meters = [(org_id, Meter(BudgetScope.KEY, key_id, ALL_TIME)) for org_id, key_id in limited]
    budgets = Budget.objects.filter(organization_id__in=org_ids).exclude(
        api_key__revoked_at__isnull=False
    )
    meters += [(budget.organization_id, meter_of(budget, now)) for budget in budgets]
    return list(dict.fromkeys(meters))


def key_tag(key_id: int | None, user_id: int | None = None) -> str:
    return f"k{key_id}" if key_id is not None else f"u{user_id}"


def admission_sync(org_ids: list[int], *, reconcile: bool) -> None:
    """Push each organization's latest ledger balance to admission; with `reconcile`, also
    clear unposted charges that are in the ledger (their announcement was lost), and bring
    the spend its limits count (its keys' credit limits, its budgets in their windows) to the
    ledger's (charges stored while Redis was down, or settled there twice, drift it), as the
    first sync back on Redis does. Both stores are kept current: the shared one, and this
    process's own, which admits calls while Redis is unreachable and must not do so against
    the balance of the last outage, nor without what Redis held then (its backlog, mirrored
    here while Redis answers)."""
    latest = _latest_balances(org_ids)
    shared, own = store(), local_store()
    _sync(own, latest, org_ids, reconcile=reconcile)
    if not in_redis():
        return
    if not REDIS.closed:
        _REDIS_MISSED.set()
    if not REDIS.allow():
        return
    try:
        _sync(shared, latest, org_ids, reconcile=reconcile)
        if reconcile or _REDIS_MISSED.is_set():
            meter_spends_sync(shared, limited_meters(org_ids, timezone.now()))
            _REDIS_MISSED.clear()
        mirror_backlogs(org_ids)
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
    target.posted_many(
        [
            (org_id, keys[key], entry_id, to_units(balance_after))
            for key, entry_id, balance_after in entries
            if key is not None  # never: the filter matched it
        ]
    )
