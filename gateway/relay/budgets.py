"""The limits that cover a call, each counted on its meter (`accounts.periods.Meter`): its key's
credit limit, and every budget of its key, of the member who created its key, and of its
organization, in the window of the UTC calendar that holds the moment it is admitted; and what a
refusal says of the limit it met."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from accounts.models import BudgetPeriod, BudgetScope
from accounts.periods import ALL_TIME, Meter, window
from billing.admission.operations import Limit
from billing.calls.cost import from_units, to_units
from gateway.request.identity import BudgetInfo, Caller

CREDIT_LIMIT = "credit_limit"


@dataclass(frozen=True, slots=True)
class Covering:
    """A limit over the call: `period` is a budget's, or CREDIT_LIMIT for its key's own."""

    meter: Meter
    amount: Decimal
    period: str


def covering(caller: Caller, now: datetime) -> tuple[Covering, ...]:
    key, found = caller.key, []
    if key is not None and key.credit_limit is not None:
        found.append(Covering(Meter(BudgetScope.KEY, key.id, ALL_TIME), key.credit_limit,
                              CREDIT_LIMIT))  # fmt: skip
    for budget in caller.org.budgets:
        if _covers(budget, caller):
            meter = Meter(budget.scope, budget.scope_id, window(budget.period, now))
            found.append(Covering(meter, budget.amount, budget.period))
    return tuple(found)


def _covers(budget: BudgetInfo, caller: Caller) -> bool:
    if budget.scope == BudgetScope.ORGANIZATION:
        return True
    if caller.key is None:
        return False
    if budget.scope == BudgetScope.KEY:
        return budget.scope_id == caller.key.id
    return budget.scope_id == caller.key.created_by_id


def limits(found: tuple[Covering, ...]) -> tuple[Limit, ...]:
    return tuple(Limit(one.meter.name, max(to_units(one.amount), 0)) for one in found)


def meters_named(found: tuple[Covering, ...], names: tuple[str, ...]) -> list[Meter]:
    return list(dict.fromkeys(one.meter for one in found if one.meter.name in names))


def refusal_message(found: tuple[Covering, ...], meter: str | None, amount: Decimal) -> str:
    """What a call refused by the limit counted on `meter` is told: which limit, and when it
    resets (the tightest, where two count the same meter)."""
    met = min((one for one in found if one.meter.name == meter), key=lambda one: one.amount)
    if met.period == CREDIT_LIMIT:
        return "This key has reached its credit limit."
    resets = met.meter.window.resets_at
    when = f"It resets at {resets:%Y-%m-%dT%H:%M:%SZ}." if resets else "It does not reset."
    return (
        f"Budget exceeded: this call may cost up to ${from_units(to_units(amount))}, more than "
        f"is left of {_whose(met)} of ${met.amount.normalize():f}. {when}"
    )


def _whose(met: Covering) -> str:
    period = BudgetPeriod(met.period).label.lower()
    if met.meter.scope == BudgetScope.KEY:
        return f"this key's {period} budget"
    if met.meter.scope == BudgetScope.MEMBER:
        return f"the {period} budget of the member who created this key"
    return f"the organization's {period} budget"
