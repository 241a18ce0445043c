"""What the retention dropped, for storing and the backfill to know: the request ids of the
generations it dropped, kept REDELIVERY past the retention, and the moment before which it may
have dropped records (its horizon).

A record delivered again after its generation was dropped (a journal applied late, a stream
entry claimed again) is found among those ids and left as it was stored: not stored, charged or
counted again. One older than the ids kept cannot be told from a call never stored; it is
parked, its charge posted once (the ledger keeps every charge's key). The backfill leaves the
days up to the horizon as they are: their generations may be gone, their rollups are not."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta
from typing import Any

from django.utils import timezone

from billing.models import DroppedCall, RetentionHorizon

SHORTEST_RETENTION = timedelta(days=1)
REDELIVERY = timedelta(days=62)
"""How long past the retention the dropped ids are kept: longer than a month partition (whose
rows older than the retention stay until the whole month is) and than any redelivery but a
journal left on a disk for months."""


def dropped_keep(cursor: Any, table: str, cutoff: datetime | None = None) -> None:
    """Keep the request ids of the generations of `table` (a partition of them, or those made
    before `cutoff`) that the retention is about to drop."""
    where, params = ("WHERE created_at < %s", [cutoff]) if cutoff is not None else ("", [])
    cursor.execute(
        "INSERT INTO billing_droppedcall (request_id, created_at) "  # noqa: S608 - our tables
        f"SELECT request_id, created_at FROM {table} {where} "
        "ON CONFLICT (request_id) DO NOTHING",
        params,
    )


def horizon_move(cutoff: datetime) -> None:
    """The retention has dropped the records made before `cutoff`: the horizon moves there (it
    never moves back), and the ids older than REDELIVERY before it are forgotten."""
    mark, made = RetentionHorizon.objects.get_or_create(pk=1, defaults={"dropped_before": cutoff})
    if not made and mark.dropped_before < cutoff:
        mark.dropped_before = cutoff
        mark.save(update_fields=["dropped_before"])
    DroppedCall.objects.filter(created_at__lt=mark.dropped_before - REDELIVERY).delete()


def horizon() -> datetime | None:
    """The moment before which records may have been dropped; None if none ever were."""
    found: datetime | None = (
        RetentionHorizon.objects.filter(pk=1).values_list("dropped_before", flat=True).first()
    )
    return found


def ids_forgotten_before(oldest: datetime) -> datetime | None:
    """The moment before which a dropped call's id is no longer kept, if a record made at
    `oldest` could be older than that: the horizon is a day old at least (the shortest
    retention), so for a batch of recent calls it is not read."""
    if oldest >= timezone.now() - SHORTEST_RETENTION - REDELIVERY:
        return None
    moment = horizon()
    return moment - REDELIVERY if moment is not None else None


def dropped_among(request_ids: Iterable[str]) -> Any:
    """The dropped calls' request ids among these, as a query (to join another)."""
    return DroppedCall.objects.filter(request_id__in=list(request_ids)).values_list("request_id")


def rebuildable_from() -> date | None:
    """The first day whose rollups the generations can rebuild: the day after the horizon's
    (that day itself may have lost some); None if nothing was ever dropped."""
    moment = horizon()
    return None if moment is None else timezone.localtime(moment).date() + timedelta(days=1)
