"""`seed_generations --org SLUG --count N --days D`: store N realistic generations of the
organization over the last D days, fast (for benchmarks)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.field_bounds import RETENTION_DAYS_MAX, SEED_COUNT_MAX, has_nul, whole_number
from accounts.models import ApiKey, Organization
from bench.seeding import generations_seed


def _counts(count: str, days: str) -> tuple[int, int]:
    try:
        return (
            whole_number(count, name="--count", least=1, most=SEED_COUNT_MAX),
            whole_number(days, name="--days", least=1, most=RETENTION_DAYS_MAX),
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from None


class Command(BaseCommand):
    help = (
        "Store N realistic generations (one attempt each, 97%% served) of an organization over "
        "the last D days, made by its API keys, with their daily usage."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", metavar="SLUG", required=True)
        parser.add_argument("--count", metavar="N", required=True)
        parser.add_argument("--days", metavar="D", default="30")

    def handle(self, *args: Any, **options: Any) -> None:
        count, days = _counts(options["count"], options["days"])
        slug = options["org"]
        org = None if has_nul(slug) else Organization.objects.filter(slug=slug).first()
        if org is None:
            raise CommandError(f"no organization {slug!r}")
        keys = list(ApiKey.objects.filter(organization=org).values_list("pk", flat=True))
        began = time.monotonic()
        made = generations_seed(org.pk, count, days, keys)
        seconds = time.monotonic() - began
        self.stdout.write(f"{org.slug}: {made} generations in {seconds:.1f} s")
