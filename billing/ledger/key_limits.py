"""A key's limits and usage as OpenRouter's key object writes them (`limit`, `limit_remaining`,
`limit_reset`, `usage`, `usage_daily`, `usage_weekly`, `usage_monthly`, in USD as numbers), for
the key's representation in the management API. Its limit is the one of its own (its credit
limit, its budgets) with the least left now; the usage of a period is that of the UTC day, ISO
week or month under way, as the stored records hold it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone

from accounts.models import ApiKey, Budget, BudgetPeriod, BudgetScope
from accounts.periods import ALL_TIME, Meter, window
from billing.ledger.budget_spend import meter_of, spent

PERIODS = {"usage_daily": BudgetPeriod.DAILY, "usage_weekly": BudgetPeriod.WEEKLY,
           "usage_monthly": BudgetPeriod.MONTHLY}  # fmt: skip


def openrouter_fields(key: ApiKey) -> dict[str, Any]:
    now = timezone.now()
    usage = {"usage": _usd(spent(key.organization_id, Meter(BudgetScope.KEY, key.pk, ALL_TIME)))}
    for field, period in PERIODS.items():
        meter = Meter(BudgetScope.KEY, key.pk, window(period, now))
        usage[field] = _usd(spent(key.organization_id, meter))
    limits = [(amount, period, amount - spent(key.organization_id, meter))
              for amount, period, meter in _limits(key)]  # fmt: skip
    if not limits:
        return {"limit": None, "limit_remaining": None, "limit_reset": None, **usage}
    amount, reset, left = min(limits, key=lambda one: one[2])
    return {"limit": _usd(amount), "limit_remaining": _usd(max(left, Decimal(0))),
            "limit_reset": reset, **usage}  # fmt: skip


def _limits(key: ApiKey) -> list[tuple[Decimal, str | None, Meter]]:
    """Each limit of the key's own: its amount, the period it resets by (None: never), and
    its meter now."""
    now = timezone.now()
    found: list[tuple[Decimal, str | None, Meter]] = []
    if key.credit_limit is not None:
        found.append((key.credit_limit, None, Meter(BudgetScope.KEY, key.pk, ALL_TIME)))
    for budget in Budget.objects.filter(api_key=key):
        reset = None if budget.period == BudgetPeriod.TOTAL else budget.period
        found.append((budget.amount, reset, meter_of(budget, now)))
    return found


def _usd(amount: Decimal) -> float:
    return float(amount)
