"""`backfill_rollups [--org SLUG] [--since DATE] [--until DATE]`: recompute the daily usage
from the generations."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.field_bounds import day_of, has_nul
from accounts.models import Organization
from billing.models import Generation
from billing.retention.dropped import rebuildable_from
from billing.usage.rollups import rollups_rebuild


def _day(flag: str, text: str | None) -> date | None:
    try:
        return day_of(text, name=flag) if text is not None else None
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _organization_id(slug: str | None) -> int | None:
    if not slug:
        return None
    org = None if has_nul(slug) else Organization.objects.filter(slug=slug).first()
    if org is None:
        raise CommandError(f"no organization {slug!r}")
    return org.pk


class Command(BaseCommand):
    help = (
        "Recompute the daily usage (the figures of the overview, usage and key spend) from the "
        "stored generations, for the days given (default: every day that has generations)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", metavar="SLUG", help="one organization (default: all)")
        parser.add_argument("--since", metavar="DATE", help="first day, YYYY-MM-DD")
        parser.add_argument("--until", metavar="DATE", help="last day, YYYY-MM-DD")

    def handle(self, *args: Any, **options: Any) -> None:
        since, until = _day("--since", options["since"]), _day("--until", options["until"])
        org_id = _organization_id(options["org"])
        since = since or _first_day(org_id)
        until = until or timezone.localdate()
        if since > until:
            raise CommandError(f"--since {since} is after --until {until}")
        first = rebuildable_from()
        if first is not None and since < first:
            kept = min(until, first - timedelta(days=1))
            self.stdout.write(f"daily usage {since} to {kept} kept: the retention dropped records")
            since = first
        if since <= until:
            written = rollups_rebuild(since, until, org_id)
            self.stdout.write(f"daily usage {since} to {until}: {written} rows")


def _first_day(org_id: int | None) -> date:
    rows = Generation.objects.all()
    if org_id is not None:
        rows = rows.filter(organization_id=org_id)
    first = rows.order_by("created_at").values_list("created_at", flat=True).first()
    return timezone.localtime(first).date() if first else timezone.localdate() - timedelta(days=1)
