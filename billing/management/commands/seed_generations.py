"""`seed_generations --org SLUG --count N --days D`: store N realistic generations of the
organization over the last D days, fast (for benchmarks)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiKey, Organization
from billing.seeding import generations_seed


class Command(BaseCommand):
    help = (
        "Store N realistic generations (one attempt each, 97%% served) of an organization over "
        "the last D days, made by its API keys, with their daily usage."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", metavar="SLUG", required=True)
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--days", type=int, default=30)

    def handle(self, *args: Any, **options: Any) -> None:
        org = Organization.objects.filter(slug=options["org"]).first()
        if org is None:
            raise CommandError(f"no organization {options['org']!r}")
        if options["count"] < 1 or options["days"] < 1:
            raise CommandError("--count and --days must be at least 1")
        keys = list(ApiKey.objects.filter(organization=org).values_list("pk", flat=True))
        began = time.monotonic()
        made = generations_seed(org.pk, options["count"], options["days"], keys)
        seconds = time.monotonic() - began
        self.stdout.write(f"{org.slug}: {made} generations in {seconds:.1f} s")
