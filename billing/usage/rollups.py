"""Daily usage: the sums of generations per organization, day, model, provider, API key,
calling app and API called. The recording adds each new generation in its own transaction (a
record delivered twice is stored once, so it is counted once), those of a batch summed per
slot; `rollups_rebuild` recomputes days from the generations (the backfill), those the
retention has not reached."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, CharField, Count, QuerySet, Sum, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Substr, TruncDate
from django.utils import timezone

from billing.models import DailyRollup, Generation
from billing.retention.dropped import rebuildable_from

SLOT = ("organization_id", "day", "model", "provider", "api_key_id", "app", "requested", "api")
APP_CHARS = 200
SUMS = ("calls", "prompt_tokens", "completion_tokens", "cost")
PARAMS = 65_535  # the most one PostgreSQL statement takes

_UPSERT = (
    f"INSERT INTO billing_dailyrollup ({', '.join(SLOT + SUMS)}) VALUES "  # noqa: S608 - column names from SLOT and SUMS, values bound
    "{rows} "
    f"ON CONFLICT ({', '.join(SLOT)}) DO UPDATE SET "
    + ", ".join(f"{name} = billing_dailyrollup.{name} + excluded.{name}" for name in SUMS)
)
_ROW = f"({', '.join(['%s'] * len(SLOT + SUMS))})"
Slot = tuple[int, date, str, str, int, str, str, str]


def rollup_add(generation: Generation) -> None:
    """Count one newly stored generation in its day's usage (call in its transaction)."""
    rollups_add([generation])


def rollups_add(generations: Iterable[Generation]) -> None:
    """Count newly stored generations in their days' usage (call in their transaction): summed
    per slot, in as few statements as the database's parameters allow, the slots in one order
    (two batches lock their rows alike)."""
    sums: dict[Slot, list[Any]] = {}
    for generation in generations:
        found = sums.setdefault(_slot(generation), [0, 0, 0, Decimal(0)])
        found[0] += 1
        found[1] += generation.prompt_tokens
        found[2] += generation.completion_tokens
        found[3] += generation.cost
    rows = sorted(sums.items())
    per_statement = (connection.features.max_query_params or PARAMS) // len(SLOT + SUMS)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            sql = _UPSERT.format(rows=", ".join([_ROW] * len(chunk)))
            cursor.execute(sql, [value for slot, total in chunk for value in (*slot, *total)])


def _slot(generation: Generation) -> Slot:
    return (
        generation.organization_id,
        timezone.localtime(generation.created_at).date(),
        generation.model,
        generation.provider,
        generation.api_key_id or 0,
        generation.app[:APP_CHARS],
        "" if generation.model else (generation.selectors or [""])[0][:APP_CHARS],
        generation.api,
    )


def slotted(generations: QuerySet[Any]) -> QuerySet[Any]:
    """The generations' daily-usage slots, computed in SQL (for the backfill): `day`, `key`,
    `app_` and `requested` beside the organization, model, provider and API."""
    first = Coalesce(KT("selectors__0"), Value(""))
    slots: QuerySet[Any] = generations.annotate(
        day=TruncDate("created_at"),
        key=Coalesce("api_key_id", 0),
        app_=Substr("app", 1, APP_CHARS),
        requested=Case(
            When(model="", then=Substr(first, 1, APP_CHARS)),
            default=Value(""),
            output_field=CharField(),
        ),
    ).values("organization_id", "day", "model", "provider", "key", "app_", "requested", "api")
    return slots


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def rollups_rebuild(since: date, until: date, organization_id: int | None = None) -> int:
    """Recompute the daily usage of the days from `since` to `until` (inclusive) from the
    generations, for one organization or all; returns the rows written. The days up to the
    retention's horizon are left as they are: their generations may be gone, not their usage."""
    since = max(since, rebuildable_from() or since)
    if since > until:
        return 0
    generations = Generation.objects.filter(
        created_at__gte=_start_of(since), created_at__lt=_start_of(until + timedelta(days=1))
    )
    rollups = DailyRollup.objects.filter(day__gte=since, day__lte=until)
    if organization_id is not None:
        generations = generations.filter(organization_id=organization_id)
        rollups = rollups.filter(organization_id=organization_id)
    grouped = slotted(generations.order_by()).annotate(
        calls=Count("pk"),
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        spent=Coalesce(Sum("cost"), Value(Decimal(0))),
    )
    with transaction.atomic():
        rollups.delete()
        rows = [_rollup(row) for row in grouped.iterator(chunk_size=5000)]
        DailyRollup.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def _rollup(row: Mapping[str, Any]) -> DailyRollup:
    return DailyRollup(
        organization_id=row["organization_id"],
        day=row["day"],
        model=row["model"],
        provider=row["provider"],
        api_key_id=row["key"],
        app=row["app_"],
        requested=row["requested"],
        api=row["api"],
        calls=row["calls"],
        prompt_tokens=row["prompt"],
        completion_tokens=row["completion"],
        cost=row["spent"],
    )
