"""Setting and lifting budgets, which owners and admins do: one a period for each key, each
member and the organization, in USD within the ledger's column."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model

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
    return Budget.objects.update_or_create(
        organization=organization, scope=_scope(api_key, member), api_key=api_key,
        member=member, period=period, defaults={"amount": amount},
    )  # fmt: skip


def budget_of(
    organization: Organization, period: str, api_key: ApiKey | None, member: User | None
) -> Budget | None:
    """The budget the key, the member, or (neither given) the organization has for the period."""
    return Budget.objects.filter(
        organization=organization, scope=_scope(api_key, member), api_key=api_key,
        member=member, period=period,
    ).first()  # fmt: skip


def budget_owner(
    organization: Organization, key_id: int | None, user_id: int | None
) -> tuple[ApiKey | None, User | None]:
    """The key and the member a budget names by their ids (either may be none); AccountError
    where one is not the organization's."""
    key = None
    if key_id is not None:
        key = ApiKey.objects.filter(organization=organization, pk=key_id).first()
        if key is None:
            raise AccountError("the key is not the organization's")
    member = None
    if user_id is not None:
        joined = Membership.objects.filter(organization=organization, user_id=user_id)
        if not joined.exists():
            raise AccountError("the member is not the organization's")
        member = get_user_model().objects.get(pk=user_id)
    return key, member


def _scope(api_key: ApiKey | None, member: User | None) -> str:
    if api_key is not None:
        return BudgetScope.KEY
    return BudgetScope.MEMBER if member is not None else BudgetScope.ORGANIZATION


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
