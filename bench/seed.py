"""`python -m bench.seed --org SLUG --count N [--days D]`: store N realistic generations of the
organization over the last D days, fast (bench.seeding makes them), for the records benchmark
and demonstrations. It is the benchmark's, so it runs from a checkout (bench/ is not installed
with Momor), in the deployment's environment as `manage.py` does; it reads and refuses its
arguments as a management command does (a bad value: one line on stderr, exit 1)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import django
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.field_bounds import RETENTION_DAYS_MAX, has_nul, whole_number

PROG = "python -m bench.seed"
SEED_COUNT_MAX = 100_000_000
"""The most generations one run stores."""


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

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.prog = PROG
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", metavar="SLUG", required=True)
        parser.add_argument("--count", metavar="N", required=True)
        parser.add_argument("--days", metavar="D", default="30")

    def handle(self, *args: Any, **options: Any) -> None:
        # here, not at the top: the models need Django set up (main sets it up)
        from accounts.models import ApiKey, Organization
        from bench.seeding import generations_seed

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


def main(argv: list[str] | None = None) -> None:
    """Django set up on Momor's settings, as manage.py sets it up, then the command."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
    try:
        _ = settings.INSTALLED_APPS  # the environment read now: a bad value is one line
    except ImproperlyConfigured as exc:
        sys.exit(f"ImproperlyConfigured: {exc}")
    django.setup()
    Command().run_from_argv([PROG, "seed", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
