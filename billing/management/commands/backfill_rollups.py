"""`backfill_rollups [--org SLUG] [--since DATE] [--until DATE]`: recompute the daily usage
from the generations."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.models import Organization
from billing.models import Generation
from billing.rollups import rollups_rebuild


class Command(BaseCommand):
    help = (
        "Recompute the daily usage (the figures of the overview, usage and key spend) from the "
        "stored generations, for the days given (default: every day that has generations)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", metavar="SLUG", help="one organization (default: all)")
        parser.add_argument("--since", type=date.fromisoformat, help="first day, YYYY-MM-DD")
        parser.add_argument("--until", type=date.fromisoformat, help="last day, YYYY-MM-DD")

    def handle(self, *args: Any, **options: Any) -> None:
        org_id = None
        if options["org"]:
            org = Organization.objects.filter(slug=options["org"]).first()
            if org is None:
                raise CommandError(f"no organization {options['org']!r}")
            org_id = org.pk
        since = options["since"] or _first_day(org_id)
        until = options["until"] or timezone.localdate()
        written = rollups_rebuild(since, until, org_id)
        self.stdout.write(f"daily usage {since} to {until}: {written} rows")


def _first_day(org_id: int | None) -> date:
    rows = Generation.objects.all()
    if org_id is not None:
        rows = rows.filter(organization_id=org_id)
    first = rows.order_by("created_at").values_list("created_at", flat=True).first()
    return timezone.localtime(first).date() if first else timezone.localdate() - timedelta(days=1)
