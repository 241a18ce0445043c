"""GenerationQuerySet: one organization's generations, filtered with one meaning of `since` and
`until` (both include what they name: a moment, or a whole day), and their totals."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from accounts.models import Organization
from billing.models import Generation, GenerationTotals
from tests.ui_helpers import make_generation

pytestmark = pytest.mark.django_db


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def january(acme: Organization, globex: Organization) -> dict[str, Generation]:
    made = {
        "30th-noon": make_generation(acme, created_at=at(30, 12), cost="0.5"),
        "31st-start": make_generation(acme, created_at=at(31, 0), model="mistral/small"),
        "31st-noon": make_generation(acme, created_at=at(31, 12), status="failed"),
        "31st-end": make_generation(acme, created_at=at(31, 23, 59), provider="azure@eu"),
        "1st-start": make_generation(acme, created_at=datetime(2026, 2, 1, tzinfo=UTC)),
    }
    make_generation(globex, created_at=at(31, 12))
    return made


def names(rows: Iterable[Generation], january: dict[str, Generation]) -> set[str]:
    ids = {g.pk for g in rows}
    return {name for name, g in january.items() if g.pk in ids}


def test_for_org_keeps_one_organizations_generations(
    acme: Organization, january: dict[str, Generation]
) -> None:
    rows = Generation.objects.for_org(acme.pk)
    assert names(rows, january) == set(january)
    assert rows.count() == len(january)


def test_a_date_stands_for_the_whole_of_its_day_at_either_end(
    acme: Organization, january: dict[str, Generation]
) -> None:
    rows = Generation.objects.for_org(acme.pk)
    the_31st = rows.filtered(since=date(2026, 1, 31), until=date(2026, 1, 31))
    assert names(the_31st, january) == {"31st-start", "31st-noon", "31st-end"}
    assert names(rows.filtered(until=date(2026, 1, 30)), january) == {"30th-noon"}
    assert names(rows.filtered(since=date(2026, 2, 1)), january) == {"1st-start"}


def test_a_moment_includes_itself_at_either_end(
    acme: Organization, january: dict[str, Generation]
) -> None:
    rows = Generation.objects.for_org(acme.pk)
    assert names(rows.filtered(since=at(31, 12), until=at(31, 23, 59)), january) == {
        "31st-noon",
        "31st-end",
    }
    assert names(rows.filtered(until=at(31, 0)), january) == {"30th-noon", "31st-start"}


def test_model_provider_and_status_match_exactly_and_empty_ones_match_all(
    acme: Organization, january: dict[str, Generation]
) -> None:
    rows = Generation.objects.for_org(acme.pk)
    assert names(rows.filtered(model="mistral/small"), january) == {"31st-start"}
    assert names(rows.filtered(provider="azure@eu"), january) == {"31st-end"}
    assert names(rows.filtered(status="failed"), january) == {"31st-noon"}
    assert rows.filtered(model="", provider="", status="").count() == len(january)


def test_totals_count_calls_cost_and_tokens(
    acme: Organization, january: dict[str, Generation]
) -> None:
    rows = Generation.objects.for_org(acme.pk)
    assert rows.totals() == GenerationTotals(calls=5, cost=Decimal("0.504"), tokens=5 * (10 + 20))
    assert rows.filtered(model="nobody/none").totals() == GenerationTotals(
        calls=0, cost=Decimal(0), tokens=0
    )
