"""Model ages as the spec writes them: ISO 8601 (P6M, P1Y, P2W, P10D, PT12H) or a .NET
TimeSpan (180.00:00:00). A month counts thirty days and a year 365."""

from __future__ import annotations

import re
from datetime import timedelta

_ISO = re.compile(
    r"^P(?!$)(?:(?P<years>\d+(?:\.\d+)?)Y)?(?:(?P<months>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:\.\d+)?)W)?(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
_TIMESPAN = re.compile(
    r"^(?:(?P<days>\d+)\.)?(?P<hours>\d{1,2}):(?P<minutes>\d{2})(?::(?P<seconds>\d{2}(?:\.\d+)?))?$"
)
_DAYS_PER = {"years": 365, "months": 30, "weeks": 7, "days": 1}


def parse_duration(text: str) -> timedelta:
    """Parse a model age; raises ValueError for anything else."""
    value = text.strip().upper()
    iso = _ISO.match(value)
    if iso:
        return _from_parts(iso.groupdict())
    span = _TIMESPAN.match(value)
    if span:
        return _from_parts(span.groupdict())
    raise ValueError(f"{text!r} is not an ISO 8601 duration (P6M) or a TimeSpan (180.00:00:00)")


def _from_parts(parts: dict[str, str | None]) -> timedelta:
    days = sum(float(parts.get(unit) or 0) * factor for unit, factor in _DAYS_PER.items())
    try:
        return timedelta(
            days=days,
            hours=float(parts.get("hours") or 0),
            minutes=float(parts.get("minutes") or 0),
            seconds=float(parts.get("seconds") or 0),
        )
    except OverflowError:
        raise ValueError(
            f"a duration of over {timedelta.max.days:,} days is out of range"
        ) from None


def format_duration(value: timedelta) -> str:
    """A stored age back as ISO 8601, in days (P180D)."""
    if value.seconds or value.microseconds:
        return f"PT{int(value.total_seconds())}S"
    return f"P{value.days}D"
