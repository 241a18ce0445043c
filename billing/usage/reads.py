"""Reads of an organization's records for the members' UI: the values its generations name, spend
per key, daily usage split by model, provider, calling app or API (the charts), all from the
daily usage (`billing.usage.rollups`, never the generations themselves). Filtering generations
is `Generation.objects.for_org(...).filtered(...)`; their CSV export is
`billing.usage.exports`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal

from django.db.models import DecimalField, F, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from billing.models import DailyRollup, GenerationApi, GenerationTotals

Split = Literal["model", "provider", "app", "api"]
METRICS = ("cost", "tokens", "calls")
NOT_SERVED = "not served"
NO_APP = "(none)"
API_NAMES = dict(GenerationApi.choices)


def seen_values(organization_id: int, field_name: str) -> list[str]:
    """The models (or providers) the organization's generations name, for filter menus."""
    rows = DailyRollup.objects.filter(organization_id=organization_id).exclude(**{field_name: ""})
    return list(rows.order_by(field_name).values_list(field_name, flat=True).distinct())


def with_spend(keys: QuerySet[Any]) -> QuerySet[Any]:
    """API keys annotated with `spend`: the sum of their generations' cost."""
    money = DecimalField(max_digits=24, decimal_places=9)
    spent = (
        DailyRollup.objects.filter(api_key_id=OuterRef("pk"))
        .order_by()
        .values("api_key_id")
        .annotate(total=Sum("cost"))
        .values("total")
    )
    zero = Value(Decimal(0), output_field=money)
    annotated: QuerySet[Any] = keys.annotate(
        spend=Coalesce(Subquery(spent, output_field=money), zero)
    )
    return annotated


def usage_totals(organization_id: int, since: date, until: date) -> GenerationTotals:
    """Calls, cost (USD) and tokens of the days from `since` to `until` (inclusive)."""
    found = _days(organization_id, since, until).aggregate(
        calls=Sum("calls"),
        cost=Sum("cost"),
        tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
    )
    return GenerationTotals(
        calls=found["calls"] or 0, cost=found["cost"] or Decimal(0), tokens=found["tokens"] or 0
    )


def _days(organization_id: int, since: date, until: date) -> QuerySet[DailyRollup]:
    return DailyRollup.objects.filter(
        organization_id=organization_id, day__gte=since, day__lte=until
    )


@dataclass
class DailyUsage:
    """Per day and per series (a model, a provider, an app or an API): cost in USD, tokens
    and calls."""

    days: list[date]
    series: list[str]
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # metric → series
    totals: dict[str, float] = field(default_factory=dict)

    def per_series(self) -> list[dict[str, Any]]:
        """The period's totals of each series, most calls first."""
        return [
            {"name": name, **{m: sum(self.values[m][name]) for m in METRICS}}
            for name in self.series
        ]

    def chart_data(self) -> dict[str, Any]:
        labels = [day.isoformat() for day in self.days]
        return {
            metric: {
                "labels": labels,
                "datasets": [
                    {"label": name, "data": self.values[metric][name]} for name in self.series
                ],
            }
            for metric in METRICS
        }


def daily_usage(organization_id: int, since: date, until: date, split: Split) -> DailyUsage:
    """Usage per day from `since` to `until` (inclusive), one series per model, provider, app
    or API (named as the UI names it: Chat Completions, Messages, Responses, Embeddings)."""
    rows = (
        _days(organization_id, since, until)
        .annotate(name=F(split))
        .values("day", "name", "requested")
        .annotate(
            cost=Sum("cost"),
            tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
            calls=Sum("calls"),
        )
        .order_by()
    )
    return _tabulate(rows, since, until, split)


def _tabulate(rows: Iterable[Any], since: date, until: date, split: Split) -> DailyUsage:
    days = [since + timedelta(days=n) for n in range((until - since).days + 1)]
    index = {day: n for n, day in enumerate(days)}
    table: dict[str, dict[str, list[float]]] = {
        m: defaultdict(lambda: [0.0] * len(days)) for m in METRICS
    }
    for row in rows:
        name = _named(split, row)
        for metric in METRICS:
            table[metric][name][index[row["day"]]] += float(row[metric] or 0)
    series = sorted(table["calls"], key=lambda name: -sum(table["calls"][name]))
    usage = DailyUsage(days=days, series=series)
    usage.values = {m: {name: table[m][name] for name in series} for m in METRICS}
    usage.totals = {m: sum(sum(v) for v in usage.values[m].values()) for m in METRICS}
    return usage


def _named(split: Split, row: Mapping[str, Any]) -> str:
    name = str(row["name"] or "")
    if split == "api":
        return API_NAMES.get(name, name)
    return name or _unnamed(split, row["requested"])


def _unnamed(split: Split, requested: str | None) -> str:
    """The series of calls without a name in the split: no app; calls no provider served,
    together; calls no model served, by what they asked for."""
    if split == "app":
        return NO_APP
    if split == "provider":
        return NOT_SERVED
    return f"{requested} (not served)" if requested else NOT_SERVED
