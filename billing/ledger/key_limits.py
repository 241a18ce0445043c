"""Keys' limits and usage as OpenRouter's key object writes them (`limit`, `limit_remaining`,
`limit_reset`, `usage`, `usage_daily`, `usage_weekly`, `usage_monthly`, in USD as numbers), for
their representation in the management API, read for a page of keys at once. A key's limit is
the one of its own (its credit limit, its budgets) with the least left now; the usage of a
period is that of the UTC day, ISO week or month under way, as the stored records hold it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone

from accounts.models import ApiKey, Budget, BudgetPeriod
from billing.ledger.budget_spend import USAGE, Usage, usage_by
from billing.models import DailyRollup


def openrouter_fields(keys: list[ApiKey]) -> dict[int, dict[str, Any]]:
    """Each key's fields, by its id, in two queries whatever the number of keys."""
    ids = [key.pk for key in keys]
    usage = usage_by(DailyRollup.objects.filter(api_key_id__in=ids), "api_key_id", timezone.now())
    budgets: dict[int, list[Budget]] = {}
    for budget in Budget.objects.filter(api_key_id__in=ids):
        budgets.setdefault(budget.api_key_id or 0, []).append(budget)
    none = dict.fromkeys(USAGE.values(), Decimal(0))
    return {key.pk: _fields(key, usage.get(key.pk, none), budgets.get(key.pk, [])) for key in keys}


def _fields(key: ApiKey, usage: Usage, budgets: list[Budget]) -> dict[str, Any]:
    limits = [(amount, reset, amount - usage[USAGE[period]])
              for amount, period, reset in _limits(key, budgets)]  # fmt: skip
    used = {field: float(amount) for field, amount in usage.items()}
    if not limits:
        return {"limit": None, "limit_remaining": None, "limit_reset": None, **used}
    amount, reset, left = min(limits, key=lambda one: one[2])
    return {"limit": float(amount), "limit_remaining": float(max(left, Decimal(0))),
            "limit_reset": reset, **used}  # fmt: skip


def _limits(key: ApiKey, budgets: list[Budget]) -> list[tuple[Decimal, str, str | None]]:
    """Each limit of the key's own: its amount, the period its spend is counted in, and the
    period it resets by (None: never)."""
    found: list[tuple[Decimal, str, str | None]] = []
    if key.credit_limit is not None:
        found.append((key.credit_limit, BudgetPeriod.TOTAL, None))
    for budget in budgets:
        reset = None if budget.period == BudgetPeriod.TOTAL else budget.period
        found.append((budget.amount, budget.period, reset))
    return found
