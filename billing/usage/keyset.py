"""Keyset (cursor) pages of generations, newest first: a page is found from the position of
the row it starts after, never by counting or skipping rows, so a page deep in the list costs
what the first one does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime

from asgiref.sync import sync_to_async
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from accounts.field_bounds import BIGINT_MAX, as_utc, day_in_range
from billing.models import Generation, GenerationQuerySet

Position = tuple[datetime, int]


def position_text(row: Generation) -> str:
    return f"{row.created_at.isoformat()}_{row.pk}"


def position_read(text: str | None) -> Position | None:
    """The position a cursor names; None for a missing or malformed one (the first page)."""
    moment, _, pk = (text or "").rpartition("_")
    try:  # a "+" of the offset arrives as a space when the cursor was not URL-encoded
        when = parse_datetime(moment) or parse_datetime(moment.replace(" ", "+"))
    except ValueError:
        return None
    if when is None or when.tzinfo is None or not day_in_range(when):
        return None
    if not (pk.isascii() and pk.isdigit()) or int(pk) > BIGINT_MAX:
        return None
    return as_utc(when), int(pk)


def older_than(rows: GenerationQuerySet, position: Position) -> GenerationQuerySet:
    when, pk = position
    later = Q(created_at__lt=when) | Q(created_at=when, pk__lt=pk)
    return rows.filter(later, created_at__lte=when).order_by("-created_at", "-pk")


def newer_than(rows: GenerationQuerySet, position: Position) -> GenerationQuerySet:
    when, pk = position
    earlier = Q(created_at__gt=when) | Q(created_at=when, pk__gt=pk)
    return rows.filter(earlier, created_at__gte=when).order_by("created_at", "pk")


@dataclass
class KeysetPage:
    rows: list[Generation]
    newer: str | None
    """The cursor of the page before this one (newer calls), None on the first page."""
    older: str | None
    """The cursor of the page after this one, None on the last page."""

    def __iter__(self) -> Iterator[Generation]:
        return iter(self.rows)

    @property
    def is_first(self) -> bool:
        return self.newer is None


def keyset_page(
    rows: GenerationQuerySet, size: int, *, before: str | None = None, after: str | None = None
) -> KeysetPage:
    """The page of `size` rows older than the `before` cursor, or else newer than the `after`
    cursor, or else the newest."""
    older_position, newer_position = position_read(before), position_read(after)
    if older_position is None and newer_position is not None:
        found = list(newer_than(rows, newer_position)[: size + 1])
        more_newer, found = len(found) > size, found[:size][::-1]
        return _page(found, more_newer=more_newer, more_older=True)
    ordered = rows.order_by("-created_at", "-pk")
    if older_position is not None:
        ordered = older_than(rows, older_position)
    found = list(ordered[: size + 1])
    return _page(found[:size], more_newer=older_position is not None, more_older=len(found) > size)


def _page(rows: list[Generation], *, more_newer: bool, more_older: bool) -> KeysetPage:
    if not rows:
        return KeysetPage(rows, None, None)
    newer = position_text(rows[0]) if more_newer else None
    older = position_text(rows[-1]) if more_older else None
    return KeysetPage(rows, newer, older)


async def batches(rows: GenerationQuerySet, size: int = 2000) -> AsyncIterator[list[Generation]]:
    """Every row, newest first, read one keyset page at a time (each a short query, so a long
    export neither holds a transaction open nor keeps more than a page in memory). Async, as
    an ASGI server streams only an async iterator without first reading it whole."""
    page = await _read(rows.order_by("-created_at", "-pk")[:size])
    while page:
        yield page
        if len(page) < size:
            return
        last = page[-1]
        page = await _read(older_than(rows, (last.created_at, last.pk))[:size])


async def _read(rows: GenerationQuerySet) -> list[Generation]:
    return await sync_to_async(lambda: list(rows))()
