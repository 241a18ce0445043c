"""The CSV export of an organization's generations: its columns, each row's values (text a
spreadsheet would run as a formula quoted), the streamed lines, a batch of rows at a time, and
the file's name. The rows are the generations page's filtered list (`billing.views.generations`
serves it)."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Iterable
from datetime import datetime

from billing.models import Generation, GenerationQuerySet
from billing.usage.keyset import batches
from core.formatting import spreadsheet_inert

CSV_FIELDS = (
    "request_id", "created_at", "model", "provider", "status", "http_status", "streamed",
    "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost",
    "latency_ms", "first_token_ms", "api_key", "error", "api",
)  # fmt: skip
"""The export's columns; a new one goes at the end, so a spreadsheet reading the others by
position keeps reading them."""

_PLAIN = CSV_FIELDS[: CSV_FIELDS.index("api_key")]
"""The columns written as the generation holds them (the time aside)."""
CSV_COLUMNS = (*_PLAIN, "error", "api", "api_key")
"""What the export reads of a generation (its key's prefix aside)."""


async def generations_csv(rows: GenerationQuerySet) -> AsyncIterator[str]:
    """The rows as CSV, newest first, a batch of lines at a time (header first)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: Iterable[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(CSV_FIELDS)
    columns = rows.select_related("api_key").only("pk", *CSV_COLUMNS, "api_key__prefix")
    async for batch in batches(columns):
        yield "".join(line(_csv_values(row)) for row in batch)


def _csv_values(row: Generation) -> list[object]:
    key = row.api_key.prefix if row.api_key else ""
    values: list[object] = [getattr(row, name) for name in _PLAIN]
    values[1] = row.created_at.isoformat()
    return [spreadsheet_inert(value) for value in [*values, key, row.error, row.api]]


def export_name(organization_slug: str, now: datetime) -> str:
    """The export's file name: the organization's slug and the moment it was asked for."""
    return f"{organization_slug}-generations-{now.strftime('%Y%m%d-%H%M%S')}.csv"
