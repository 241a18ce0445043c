"""`maintain_records [--retention-days N]`: make the coming months' partitions of the call
records and drop those older than the retention."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.field_bounds import RETENTION_DAYS_MAX, whole_number
from billing.retention.maintenance import records_maintain


def _retention_days(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return whole_number(text, name="--retention-days", least=0, most=RETENTION_DAYS_MAX)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


class Command(BaseCommand):
    help = (
        "Make the coming months' partitions of generations and attempts, and drop the records "
        "older than MOMOR_RECORD_RETENTION_DAYS (0: keep all). The ledger is never dropped. "
        "Purge the audit trail's events older than MOMOR_AUDIT_RETENTION_DAYS."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--retention-days", metavar="N", help="override MOMOR_RECORD_RETENTION_DAYS"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        upkeep = records_maintain(_retention_days(options["retention_days"]))
        self.stdout.write(f"partitions made: {', '.join(upkeep.made) or 'none'}")
        dropped = upkeep.dropped
        self.stdout.write(f"partitions dropped: {', '.join(dropped.partitions) or 'none'}")
        self.stdout.write(f"older rows deleted: {dropped.rows}")
        self.stdout.write(f"audit events purged: {upkeep.audit_purged}")
