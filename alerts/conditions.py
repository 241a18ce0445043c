"""What each kind of rule reads, and whether it holds: for every rule of an organization, the
findings of one check (a subject, whether the rule's condition holds for it, and what an event
of it would say)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q

from accounts.models import Budget
from accounts.periods import window
from alerts.models import AlertKind, AlertRule
from billing.ledger.budget_spend import spent_now_many
from billing.models import Attempt, DeadLetter, LedgerEntry
from core.formatting import format_usd, money

ERROR_WINDOW = timedelta(minutes=15)
"""A provider's error rate is that of the organization's attempts on it in this span..."""
ERROR_LEAST_ATTEMPTS = 10
"""...once it holds at least this many: a single failed try is not a rate."""


@dataclass(frozen=True)
class Finding:
    """A rule's condition for one subject: `holds`, and in which episode when the subject's
    window names it (a budget's period); else an episode is a spell of holding."""

    rule: AlertRule
    subject: str
    holds: bool
    type: str
    summary: str
    data: dict[str, Any] = field(default_factory=dict)
    window: str | None = None


def findings(rules: list[AlertRule], now: datetime) -> Iterator[Finding]:
    """The findings of an organization's rules, each kind read once."""
    by_kind = {kind: [r for r in rules if r.kind == kind] for kind in AlertKind.values}
    if not rules:
        return
    org_id = rules[0].organization_id
    if by_kind[AlertKind.BUDGET]:
        yield from _budgets(by_kind[AlertKind.BUDGET], org_id, now)
    if by_kind[AlertKind.BALANCE]:
        yield from _balance(by_kind[AlertKind.BALANCE], org_id)
    if by_kind[AlertKind.ERROR_RATE]:
        yield from _error_rates(by_kind[AlertKind.ERROR_RATE], org_id, now)
    if by_kind[AlertKind.DEAD_LETTERS]:
        yield from _dead_letters(by_kind[AlertKind.DEAD_LETTERS], org_id)


def _budgets(rules: list[AlertRule], org_id: int, now: datetime) -> Iterator[Finding]:
    budgets = list(
        Budget.objects.filter(organization_id=org_id).select_related("api_key", "member")
    )
    if not budgets:
        return
    spent = spent_now_many(budgets, now)
    for budget in budgets:
        used = spent[budget.pk]
        share = used * 100 / budget.amount if budget.amount > 0 else Decimal(100)
        span = window(budget.period, now)
        data = {"budget": _budget_fields(budget, span.resets_at), "spent": money(used),
                "percent": float(round(share, 2))}  # fmt: skip
        for rule in rules:
            reached = share >= rule.threshold
            yield Finding(
                rule=rule,
                subject=f"budget:{budget.pk}",
                holds=reached,
                type="budget.threshold_reached",
                summary=f"{_budget_name(budget)} reached {_number(rule.threshold)} % "
                f"({format_usd(used)} of {format_usd(budget.amount)})",
                data={**data, "threshold_percent": float(rule.threshold)},
                window=span.label or "all",
            )


def _budget_name(budget: Budget) -> str:
    period = budget.get_period_display().lower()
    if budget.api_key is not None:
        return f"The {period} budget of key {budget.api_key.name}"
    if budget.member is not None:
        return f"The {period} budget of {budget.member.get_username()}"
    return f"The organization's {period} budget"


def _budget_fields(budget: Budget, resets_at: datetime | None) -> dict[str, Any]:
    return {
        "id": budget.pk,
        "scope": budget.scope,
        "key": budget.api_key_id,
        "member": budget.member_id,
        "period": budget.period,
        "amount": money(budget.amount),
        "resets_at": resets_at.isoformat().replace("+00:00", "Z") if resets_at else None,
    }


def _balance(rules: list[AlertRule], org_id: int) -> Iterator[Finding]:
    last = LedgerEntry.objects.filter(organization_id=org_id).order_by("-id").first()
    balance = last.balance_after if last is not None else Decimal(0)
    for rule in rules:
        yield Finding(
            rule=rule,
            subject="balance",
            holds=balance < rule.threshold,
            type="balance.low",
            summary=f"The balance is {format_usd(balance)}, below {format_usd(rule.threshold)}",
            data={"balance": money(balance), "threshold": money(rule.threshold)},
        )


def _error_rates(rules: list[AlertRule], org_id: int, now: datetime) -> Iterator[Finding]:
    since = now - ERROR_WINDOW
    rows = (
        Attempt.objects.filter(created_at__gte=since, generation__organization_id=org_id)
        .values("provider")
        .annotate(tries=Count("id"), failed=Count("id", filter=~Q(error="")))
    )
    counts = {row["provider"]: (row["tries"], row["failed"]) for row in rows}
    for rule in rules:
        for provider in sorted({*counts, *_watched(rule)}):
            tries, failed = counts.get(provider, (0, 0))
            rate = Decimal(failed * 100) / tries if tries else Decimal(0)
            yield Finding(
                rule=rule,
                subject=f"provider:{provider}",
                holds=tries >= ERROR_LEAST_ATTEMPTS and rate > rule.threshold,
                type="provider.error_rate_high",
                summary=f"{provider} failed {failed} of {tries} tries in 15 minutes "
                f"({_number(rate)} %, over {_number(rule.threshold)} %)",
                data={
                    "provider": provider,
                    "window_minutes": 15,
                    "attempts": tries,
                    "failed": failed,
                    "error_rate_percent": float(round(rate, 2)),
                    "threshold_percent": float(rule.threshold),
                },
            )


def _watched(rule: AlertRule) -> list[str]:
    """The providers a rule's condition last held for: each is checked until it stops."""
    states = rule.states.filter(holding=True, subject__startswith="provider:")
    return [s.subject.removeprefix("provider:") for s in states]


def _dead_letters(rules: list[AlertRule], org_id: int) -> Iterator[Finding]:
    count = DeadLetter.objects.filter(organization_id=org_id).count()
    for rule in rules:
        yield Finding(
            rule=rule,
            subject="dead_letters",
            holds=count >= max(rule.threshold, Decimal(1)),
            type="dead_letters.present",
            summary=f"{count} of the organization's call records could not be stored "
            "and wait for an operator",
            data={"count": count, "threshold": int(rule.threshold)},
        )


def _number(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.01')).normalize():f}"
