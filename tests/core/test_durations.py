"""Model ages as the spec writes them: ISO 8601 or a TimeSpan; a month is 30 days, a year 365."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("P6M", 180),
        ("P1Y", 365),
        ("P2Y", 730),
        ("P1M", 30),
        ("P12M", 360),
        ("P2W", 14),
        ("P10D", 10),
        ("P1Y6M", 545),
        ("p6m", 180),
        (" P6M ", 180),
        ("180.00:00:00", 180),
        ("1.00:00:00", 1),
        ("P0.5Y", 182.5),
    ],
)
def test_it_reads_an_age_in_days(text: str, days: float) -> None:
    assert parse_duration(text) == timedelta(days=days)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT12H", timedelta(hours=12)),
        ("P1DT2H30M", timedelta(days=1, hours=2, minutes=30)),
        ("12:30", timedelta(hours=12, minutes=30)),
        ("2.12:30:15", timedelta(days=2, hours=12, minutes=30, seconds=15)),
    ],
)
def test_it_reads_hours_and_minutes(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "P", "PT", "6M", "P6X", "six months", "180", "P-1Y", "1Y"])
def test_it_refuses_what_is_not_an_age(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_duration(text)


def test_it_writes_an_age_back_in_days() -> None:
    assert format_duration(timedelta(days=180)) == "P180D"
    assert parse_duration(format_duration(timedelta(days=365))) == timedelta(days=365)
