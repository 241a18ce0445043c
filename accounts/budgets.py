"""Setting and lifting budgets, which owners and admins do: one a period for each key, each
member and the organization, in USD within the ledger's column."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from accounts.field_bounds import USD_CEILING, USD_PLACES
from accounts.models import ApiKey, Budget, BudgetPeriod, BudgetScope, Membership, Organization
from accounts.services import AccountError

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def budget_set(
    *,
    organization: Organization,
    period: str,
    amount: Decimal,
    api_key: ApiKey | None = None,
    member: User | None = None,
) -> tuple[Budget, bool]:
    """The budget of the key, the member, or (neither given) the organization for the period,
    made or changed to `amount`; and whether it was made."""
    _check(organization, period, amount, api_key, member)
    scope = (
        BudgetScope.KEY if api_key else BudgetScope.MEMBER if member else BudgetScope.ORGANIZATION
    )
    return Budget.objects.update_or_create(
        organization=organization, scope=scope, api_key=api_key, member=member, period=period,
        defaults={"amount": amount},
    )  # fmt: skip


def _check(
    organization: Organization,
    period: str,
    amount: Decimal,
    api_key: ApiKey | None,
    member: User | None,
) -> None:
    if period not in BudgetPeriod.values:
        raise AccountError(f"the period is one of {', '.join(BudgetPeriod.values)}")
    if amount < 0:
        raise AccountError("a budget must not be negative")
    if amount >= USD_CEILING:
        raise AccountError("a budget must be under 1,000,000,000 USD")
    if amount != round(amount, USD_PLACES):
        raise AccountError(f"a budget has at most {USD_PLACES} decimal places")
    if api_key is not None and member is not None:
        raise AccountError("a budget is a key's or a member's, not both")
    if api_key is not None and api_key.organization_id != organization.pk:
        raise AccountError("the key is not the organization's")
    joined = Membership.objects.filter(organization=organization, user=member)
    if member is not None and not joined.exists():
        raise AccountError("the member is not the organization's")
