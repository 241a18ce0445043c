"""What a budget's meter has spent, as the daily usage holds it: admission loads it, and the
pages and the management API show it."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import Sum
from django.utils import timezone

from accounts.models import ApiKey, Budget, BudgetScope
from accounts.periods import Meter, window
from billing.models import DailyRollup


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


def spent_now(budget: Budget) -> Decimal:
    """What the budget has spent in its current window."""
    return spent(budget.organization_id, meter_of(budget, timezone.now()))
