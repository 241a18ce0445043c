"""Upkeep of the call records: month partitions made ahead, and records older than the
retention (MOMOR_RECORD_RETENTION_DAYS) dropped; and the audit trail's older rows
(MOMOR_AUDIT_RETENTION_DAYS) purged. Run when a worker starts and by the `maintain_records`
command (daily, from cron or a scheduler)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings

from audit.retention import audit_purge
from billing.retention.partitions import Dropped, partitions_ensure, retention_apply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upkeep:
    made: list[str]
    dropped: Dropped = field(default_factory=lambda: Dropped([], 0))
    audit_purged: int = 0


def records_maintain(retention_days: int | None = None) -> Upkeep:
    """Make the coming months' partitions, apply the records' retention (when one is set)
    and the audit trail's."""
    days = settings.MOMOR_RECORD_RETENTION_DAYS if retention_days is None else retention_days
    made, purged = partitions_ensure(), audit_purge()
    if days <= 0:
        return Upkeep(made, audit_purged=purged)
    return Upkeep(made, retention_apply(days), purged)


def records_maintain_quietly() -> None:
    """`records_maintain` for a starting worker: a failure is logged, never fatal."""
    try:
        upkeep = records_maintain()
    except Exception:
        log.exception("could not maintain the call records' partitions")
        return
    if upkeep.made or upkeep.dropped.partitions:
        log.info("records: made %s, dropped %s", upkeep.made, upkeep.dropped.partitions)
