"""Budgets on the members' UI: each shown on the keys and members pages with what it spent in
its current window against its amount (a bar), and set or lifted there by owners and admins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.budgets import budget_of, budget_owner, budget_set
from accounts.forms import BudgetForm
from accounts.hooks import budget_spent
from accounts.models import Budget, Membership, Role
from accounts.periods import window
from accounts.permissions import role_required
from accounts.services import AccountError
from accounts.views.helpers import errors_sentence


@dataclass(frozen=True, slots=True)
class BudgetRow:
    budget: Budget
    spent: Decimal

    @property
    def share(self) -> int:
        """Percent of the amount spent, at most 100."""
        if self.budget.amount <= 0:
            return 100 if self.spent > 0 else 0
        return min(int(self.spent * 100 / self.budget.amount), 100)

    @property
    def resets_at(self) -> datetime | None:
        return window(self.budget.period, timezone.now()).resets_at


def budget_rows(budgets: Iterable[Budget]) -> list[BudgetRow]:
    found = list(budgets)
    spent = budget_spent()(found)
    return [BudgetRow(budget, spent[budget.pk]) for budget in found]


def rows_by(budgets: Iterable[Budget], field: str) -> dict[int, list[BudgetRow]]:
    """The rows of the budgets by their key's or member's id (`field`)."""
    found: dict[int, list[BudgetRow]] = {}
    for row in budget_rows(budgets):
        found.setdefault(getattr(row.budget, field), []).append(row)
    return found


@require_POST
@role_required(Role.ADMIN)
def budget_change(request: HttpRequest, membership: Membership) -> HttpResponse:
    back = "members" if request.POST.get("back") == "members" else "keys"
    form = BudgetForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Budget not changed: " + errors_sentence(form))
        return redirect(back)
    org, data = membership.organization, form.cleaned_data
    try:
        key, member = budget_owner(org, data["key"], data["member"])
    except AccountError as exc:
        raise Http404(str(exc)) from None
    try:
        if data["amount"] is None:
            _lift(request, budget_of(org, data["period"], key, member))
        else:
            with audited_on(request, "set") as change:
                change.obj, _ = budget_set(
                    organization=org,
                    period=data["period"],
                    amount=data["amount"],
                    api_key=key,
                    member=member,
                )
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Budget saved.")
    return redirect(back)


def _lift(request: HttpRequest, found: Budget | None) -> None:
    if found is not None:
        with audited_on(request, "delete", found):
            found.delete()
