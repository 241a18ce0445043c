"""The bounds of what crosses an edge (a form, a management API body or query, a command's
argument) before it reaches a column or a date's arithmetic: PostgreSQL's integer ranges,
the money columns' digits, and the days Python's calendar can add to or shift by a time zone.

Every app's edges check against these, so a value out of range is refused where it enters,
never found by the database or by an OverflowError."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

INTEGER_MAX = 2**31 - 1
"""PostgreSQL's integer (Django's IntegerField and PositiveIntegerField)."""

BIGINT_MAX = 2**63 - 1
"""PostgreSQL's bigint (Django's BigIntegerField and BigAutoField: every id)."""

USD_PLACES = 9
USD_CEILING = Decimal(10) ** (18 - USD_PLACES)
"""Money columns hold 18 digits, 9 of them decimal: an amount is below a billion USD."""

RETENTION_DAYS_MAX = 36_500
"""A span of days an operator gives (a retention, a seeding's spread): a hundred years."""

FIRST_DAY = date(2, 1, 1)
LAST_DAY = date(9998, 12, 31)
"""Dates and moments Momor takes: a year's margin inside Python's calendar (years 1 to 9999),
so that a day added to one or a time zone applied to it stays on the calendar."""


def day_in_range(value: date | datetime) -> bool:
    """Whether a date, or a moment's date (in its own time zone), is within FIRST_DAY and
    LAST_DAY."""
    day = value.date() if isinstance(value, datetime) else value
    return FIRST_DAY <= day <= LAST_DAY


def as_utc(moment: datetime) -> datetime:
    """An aware moment in UTC: PostgreSQL takes offsets of less than 16 hours, Python's reach
    24 (within the days Momor takes, the shift stays on the calendar)."""
    return moment.astimezone(UTC)


def day_range_text() -> str:
    return f"between {FIRST_DAY.isoformat()} and {LAST_DAY.isoformat()}"


def whole_number(text: str | int, *, name: str, least: int, most: int) -> int:
    """A whole number as an operator types it, within [least, most]; ValueError (one line,
    naming it) for anything else."""
    text = str(text)
    try:
        number = int(text.strip())
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {text!r}") from None
    if not least <= number <= most:
        raise ValueError(f"{name} must be from {least:,} to {most:,}, not {text.strip()}")
    return number


def day_of(text: str | date, *, name: str) -> date:
    """A day as an operator types it (YYYY-MM-DD), within the days Momor takes; ValueError
    (one line, naming it) for anything else."""
    text = str(text)
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{name} must be a day, YYYY-MM-DD, not {text!r}") from None
    if not day_in_range(day):
        raise ValueError(f"{name} must be a day {day_range_text()}, not {text.strip()}")
    return day


def has_nul(text: str) -> bool:
    """PostgreSQL's text holds no NUL character: a value with one can be neither stored nor
    compared."""
    return "\x00" in text
