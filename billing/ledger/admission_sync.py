"""Admission's view of the ledger: balances loaded when first needed, and every few seconds
brought up to date (top-ups made elsewhere, charges whose announcement was lost)."""

from __future__ import annotations

import logging
import threading
from decimal import Decimal

from django.db.models import Max, Sum

from accounts.models import ApiKey, Organization
from billing.admission.operations import (
    AdmissionStore,
    KeySpend,
    in_redis,
    local_store,
    mirror_backlogs,
    store,
)
from billing.calls.cost import to_units
from billing.ledger.posting import charge_key
from billing.models import DailyRollup, LedgerEntry
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


def load_key_spend(org_id: int, key_id: int, into: AdmissionStore | None = None) -> None:
    key_spends_sync(into or store(), [(org_id, key_id)])


def key_spends_sync(target: AdmissionStore, keys: list[tuple[int, int]]) -> None:
    """Each key's (organization id, key id) spend from the ledger, as the daily usage sums it
    (every posted charge, a parked call's too), plus the charges the store holds for the key
    that the ledger does not have. The store is read before the ledger: a charge posted in
    between counts twice until the next sync, never not at all."""
    tags = [(org_id, key_tag(key_id)) for org_id, key_id in keys]
    held = target.keys_unposted(tags)
    posted = _posted({rid for rids in held for rid in rids})
    spent = _key_spends([key_id for _, key_id in keys])
    target.set_key_spends([
        KeySpend(org_id, tag, spent.get(key_id, 0), tuple(rid for rid in rids if rid in posted))
        for (org_id, key_id), (_, tag), rids in zip(keys, tags, held, strict=True)
    ])  # fmt: skip


def _posted(request_ids: set[str]) -> set[str]:
    """Those of the calls whose charge the ledger has."""
    keys = [charge_key(rid) for rid in request_ids]
    found = LedgerEntry.objects.filter(idempotency_key__in=keys)
    return {key.removeprefix("charge:") for key in found.values_list("idempotency_key", flat=True)
            if key is not None}  # fmt: skip


def _key_spends(key_ids: list[int]) -> dict[int, int]:
    rows = DailyRollup.objects.filter(api_key_id__in=key_ids).values("api_key_id")
    sums = rows.annotate(spent=Sum("cost")).values_list("api_key_id", "spent")
    return {key_id: to_units(spent or Decimal(0)) for key_id, spent in sums}


def _limited_keys(org_ids: list[int]) -> list[tuple[int, int]]:
    """The keys of these organizations held to a credit limit of their own."""
    rows = ApiKey.objects.filter(organization_id__in=org_ids, credit_limit__isnull=False)
    return list(rows.filter(revoked_at__isnull=True).values_list("organization_id", "id"))


def key_tag(key_id: int | None, user_id: int | None = None) -> str:
    return f"k{key_id}" if key_id is not None else f"u{user_id}"


def admission_sync(org_ids: list[int], *, reconcile: bool) -> None:
    """Push each organization's latest ledger balance to admission; with `reconcile`, also
    clear unposted charges that are in the ledger (their announcement was lost), and bring
    the spend of its keys held to a credit limit to the ledger's (charges stored while Redis
    was down, or settled there twice, drift it), as the first sync back on Redis does. Both
    stores
    are kept current: the shared one, and this process's own, which admits calls while Redis
    is unreachable and must not do so against the balance of the last outage, nor without
    what Redis held then (its backlog, mirrored here while Redis answers)."""
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
            key_spends_sync(shared, _limited_keys(org_ids))
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
    for key, entry_id, balance_after in entries:
        if key is not None:  # never: the filter matched it
            target.posted(org_id, keys[key], to_units(balance_after), entry_id)
