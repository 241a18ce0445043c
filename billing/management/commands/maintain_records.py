"""`maintain_records [--retention-days N]`: make the coming months' partitions of the call
records and drop those older than the retention."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from billing.maintenance import records_maintain


class Command(BaseCommand):
    help = (
        "Make the coming months' partitions of generations and attempts, and drop the records "
        "older than MOMOR_RECORD_RETENTION_DAYS (0: keep all). The ledger is never dropped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--retention-days", type=int, help="override MOMOR_RECORD_RETENTION_DAYS"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        upkeep = records_maintain(options["retention_days"])
        self.stdout.write(f"partitions made: {', '.join(upkeep.made) or 'none'}")
        dropped = upkeep.dropped
        self.stdout.write(f"partitions dropped: {', '.join(dropped.partitions) or 'none'}")
        self.stdout.write(f"older rows deleted: {dropped.rows}")
