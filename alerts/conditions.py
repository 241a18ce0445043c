"""What each kind of rule reads, and whether it holds: for every organization's rules, the
findings of one check (a subject, whether the rule's condition holds for it, and what an event
of it would say)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Q

from accounts.models import Budget
from accounts.periods import window
from alerts.models import AlertKind, AlertRule, AlertState
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


Rules = dict[int, list[AlertRule]]
"""Rules of one kind, by organization id."""


def findings(rules: list[AlertRule], now: datetime) -> Iterator[Finding]:
    """The findings of every organization's rules: each kind read once for all of them (a few
    queries a check, however many organizations)."""
    by_kind: dict[str, Rules] = {kind: {} for kind in AlertKind.values}
    for rule in rules:
        by_kind[rule.kind].setdefault(rule.organization_id, []).append(rule)
    if by_kind[AlertKind.BUDGET]:
        yield from _budgets(by_kind[AlertKind.BUDGET], now)
    if by_kind[AlertKind.BALANCE]:
        yield from _balances(by_kind[AlertKind.BALANCE])
    if by_kind[AlertKind.ERROR_RATE]:
        yield from _error_rates(by_kind[AlertKind.ERROR_RATE], now)
    if by_kind[AlertKind.DEAD_LETTERS]:
        yield from _dead_letters(by_kind[AlertKind.DEAD_LETTERS])


def _budgets(rules: Rules, now: datetime) -> Iterator[Finding]:
    budgets = list(
        Budget.objects.filter(organization_id__in=rules).select_related("api_key", "member")
    )
    spent = spent_now_many(budgets, now) if budgets else {}
    for budget in budgets:
        used = spent[budget.pk]
        share = used * 100 / budget.amount if budget.amount > 0 else Decimal(100)
        span = window(budget.period, now)
        data = {"budget": _budget_fields(budget, span.resets_at), "spent": money(used),
                "percent": float(round(share, 2))}  # fmt: skip
        for rule in rules[budget.organization_id]:
            yield Finding(
                rule=rule,
                subject=f"budget:{budget.pk}",
                holds=share >= rule.threshold,
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


def _balances(rules: Rules) -> Iterator[Finding]:
    latest = (
        LedgerEntry.objects.filter(organization_id__in=rules)
        .values("organization_id")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    balances = dict(
        LedgerEntry.objects.filter(id__in=list(latest)).values_list(
            "organization_id", "balance_after"
        )
    )
    for org_id, mine in rules.items():
        balance = balances.get(org_id, Decimal(0))
        for rule in mine:
            yield Finding(
                rule=rule,
                subject="balance",
                holds=balance < rule.threshold,
                type="balance.low",
                summary=f"The balance is {format_usd(balance)}, below {format_usd(rule.threshold)}",
                data={"balance": money(balance), "threshold": money(rule.threshold)},
            )


def _error_rates(rules: Rules, now: datetime) -> Iterator[Finding]:
    rows = (
        Attempt.objects.filter(
            created_at__gte=now - ERROR_WINDOW, generation__organization_id__in=rules
        )
        .values("generation__organization_id", "provider")
        .annotate(tries=Count("id"), failed=Count("id", filter=~Q(error="")))
    )
    counts: dict[int, dict[str, tuple[int, int]]] = {}
    for row in rows:
        counts.setdefault(row["generation__organization_id"], {})[row["provider"]] = (
            row["tries"], row["failed"]
        )  # fmt: skip
    watched = _watched([rule for mine in rules.values() for rule in mine])
    for org_id, mine in rules.items():
        seen = counts.get(org_id, {})
        for rule in mine:
            for provider in sorted({*seen, *watched.get(rule.pk, ())}):
                yield _error_rate(rule, provider, *seen.get(provider, (0, 0)))


def _error_rate(rule: AlertRule, provider: str, tries: int, failed: int) -> Finding:
    rate = Decimal(failed * 100) / tries if tries else Decimal(0)
    return Finding(
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


def _watched(rules: list[AlertRule]) -> dict[int, list[str]]:
    """By rule, the providers its condition last held for: each is checked until it stops."""
    states = AlertState.objects.filter(
        rule__in=rules, holding=True, subject__startswith="provider:"
    )
    found: dict[int, list[str]] = {}
    for rule_id, subject in states.values_list("rule_id", "subject"):
        found.setdefault(rule_id, []).append(subject.removeprefix("provider:"))
    return found


def _dead_letters(rules: Rules) -> Iterator[Finding]:
    counts = dict(
        DeadLetter.objects.filter(organization_id__in=rules)
        .values("organization_id")
        .annotate(count=Count("id"))
        .values_list("organization_id", "count")
    )
    for org_id, mine in rules.items():
        count = counts.get(org_id, 0)
        for rule in mine:
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
