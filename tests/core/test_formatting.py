"""The members' UI's one money format and one date format (core.formatting)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from core.formatting import usd, when


@pytest.mark.parametrize(
    ("amount", "written"),
    [
        (Decimal(0), "$0.00"),
        (Decimal("100"), "$100.00"),
        (Decimal("1.5"), "$1.50"),
        (Decimal("1234567.891"), "$1,234,567.891"),
        (Decimal("99.999960800"), "$99.999961"),
        (Decimal("0.000033"), "$0.000033"),
        (Decimal("0.0000335"), "$0.000034"),
        (Decimal("0.000000400"), "<$0.000001"),
        (Decimal("-0.0000392"), "-$0.000039"),
        (0.25, "$0.25"),
        ("not a number", ""),
        (None, ""),
    ],
)
def test_money_has_two_decimals_at_least_and_six_at_most(amount: object, written: str) -> None:
    assert usd(amount) == written


def test_a_moment_and_a_day_are_written_one_way() -> None:
    assert when(datetime(2026, 12, 1, 9, 5, 59, tzinfo=UTC)) == "Dec 1, 2026 09:05"
    assert when(date(2026, 12, 1)) == "Dec 1, 2026"
    assert when(None) == ""
