"""`load_catalog FILE.toml [--keep-existing]`: upsert providers, regions, models and offerings
from a file; or only create those the database lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit.actors import Actor
from audit.trail import record_run
from gateway.catalog import CatalogError, catalog_load


class Command(BaseCommand):
    help = "Upsert providers, regions, models and offerings from a catalog file (TOML)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, metavar="FILE.toml")
        parser.add_argument(
            "--keep-existing",
            action="store_true",
            help="only create the rows the database lacks; leave the others as they are",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if "\x00" in str(options["file"]):
            raise CommandError(f"cannot read {str(options['file'])!r}: a path holds no NUL")
        try:
            with transaction.atomic():
                report = catalog_load(options["file"], keep_existing=options["keep_existing"])
                note = f"{options['file']}: " + "; ".join(report.lines())
                record_run(Actor.command("load_catalog"), "load", "gateway.catalog", note=note)
        except CatalogError as exc:
            raise CommandError(str(exc)) from None
        for line in report.lines():
            self.stdout.write(line)
