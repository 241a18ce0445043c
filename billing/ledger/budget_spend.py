"""What a budget's meter has spent, as the daily usage holds it: admission loads it one meter
at a time; the pages and the management API read it for all their budgets at once
(`spent_now_many`), as they read a page of keys' usage (`usage_by`)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Q, QuerySet, Sum
from django.utils import timezone

from accounts.models import ApiKey, Budget, BudgetPeriod, BudgetScope
from accounts.periods import Meter, window
from billing.models import DailyRollup

USAGE: dict[str, str] = {BudgetPeriod.TOTAL: "usage", BudgetPeriod.DAILY: "usage_daily",
         BudgetPeriod.WEEKLY: "usage_weekly", BudgetPeriod.MONTHLY: "usage_monthly"}  # fmt: skip
"""What each period's spend is named in a usage: all time, and the UTC day, ISO week and month
under way."""
Usage = dict[str, Decimal]


def meter_of(budget: Budget, now: datetime) -> Meter:
    """The budget's meter in the window of its period that holds `now`."""
    return Meter(budget.scope, scope_id(budget), window(budget.period, now))


def scope_id(budget: Budget) -> int:
    """Its key's id, its member's user id, or its organization's id."""
    if budget.scope == BudgetScope.KEY and budget.api_key_id is not None:
        return budget.api_key_id
    if budget.scope == BudgetScope.MEMBER and budget.member_id is not None:
        return budget.member_id
    return budget.organization_id


def spent(org_id: int, meter: Meter) -> Decimal:
    """The costs of the meter's scope on the days of its window. A member's is that of the keys
    they created."""
    rows = DailyRollup.objects.filter(organization_id=org_id)
    if meter.scope == BudgetScope.KEY:
        rows = rows.filter(api_key_id=meter.scope_id)
    elif meter.scope == BudgetScope.MEMBER:
        created = ApiKey.objects.filter(organization_id=org_id, created_by_id=meter.scope_id)
        rows = rows.filter(api_key_id__in=created.values("id"))
    if meter.window.start is not None:
        rows = rows.filter(day__gte=meter.window.start, day__lt=meter.window.end)
    total: Decimal | None = rows.aggregate(spent=Sum("cost"))["spent"]
    return total or Decimal(0)


def usage_by(rows: QuerySet[DailyRollup], group: str, now: datetime) -> dict[int, Usage]:
    """The rows' costs by `group` (a column of ids), in all time and in each period's window
    that holds `now`: one query."""
    sums = {}
    for period, field in USAGE.items():
        span = window(period, now)
        in_span = Q(day__gte=span.start, day__lt=span.end) if span.start else Q()
        sums[field] = Sum("cost", filter=in_span)
    found: dict[int, Usage] = {}
    for row in rows.values(group).annotate(**sums):
        sums_of: dict[str, Any] = dict(row)
        found[sums_of[group]] = {field: sums_of[field] or Decimal(0) for field in USAGE.values()}
    return found


def spent_now_many(budgets: list[Budget], now: datetime | None = None) -> dict[int, Decimal]:
    """Each budget's spend in the window that holds `now` (by default, the current one), by
    budget id, in at most four queries."""
    now = now or timezone.now()
    by_scope = {scope: [b for b in budgets if b.scope == scope] for scope in BudgetScope.values}
    members = by_scope[BudgetScope.MEMBER]
    creators: dict[int, tuple[int, int | None]] = {}
    if members:
        made = ApiKey.objects.filter(
            organization_id__in={b.organization_id for b in members},
            created_by_id__in={b.member_id for b in members},
        )
        creators = {pk: (org, user) for pk, org, user in
                    made.values_list("id", "organization_id", "created_by_id")}  # fmt: skip
    key_ids = {b.api_key_id or 0 for b in by_scope[BudgetScope.KEY]} | set(creators)
    keys = usage_by(DailyRollup.objects.filter(api_key_id__in=key_ids), "api_key_id", now)
    org_ids = {b.organization_id for b in by_scope[BudgetScope.ORGANIZATION]}
    orgs = usage_by(DailyRollup.objects.filter(organization_id__in=org_ids), "organization_id",
                    now) if org_ids else {}  # fmt: skip
    return {b.pk: _spent_of(b, keys, orgs, creators) for b in budgets}


def _spent_of(
    budget: Budget,
    keys: dict[int, Usage],
    orgs: dict[int, Usage],
    creators: dict[int, tuple[int, int | None]],
) -> Decimal:
    field = USAGE[budget.period]
    if budget.scope == BudgetScope.KEY:
        return keys.get(budget.api_key_id or 0, {}).get(field, Decimal(0))
    if budget.scope == BudgetScope.MEMBER:
        mine = [pk for pk, made_by in creators.items()
                if made_by == (budget.organization_id, budget.member_id)]  # fmt: skip
        return sum((keys.get(pk, {}).get(field, Decimal(0)) for pk in mine), Decimal(0))
    return orgs.get(budget.organization_id, {}).get(field, Decimal(0))
