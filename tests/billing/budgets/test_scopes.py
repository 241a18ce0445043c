"""Budgets over HTTP: a key's, a member's (every key they created) and the organization's, of
each period, refuse the call whose worst cost is more than is left of them with 402, saying
which budget and when it resets; a call they cover is served, and its cost counts against
them; a key, member or organization a budget does not name is not held to it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts.models import BudgetPeriod
from billing.recording.hand_off import drain
from tests.billing.admission.test_admission import MINI, mini_reservation, post_raw
from tests.billing.budgets.helpers import PERIODS, budget, member_key, refused
from tests.billing.conftest import World
from tests.conftest import make_key, make_org

pytestmark = pytest.mark.django_db(transaction=True)

USAGE = {"prompt_tokens": 10, "completion_tokens": 500}  # about half the reservation


@pytest.fixture
def worst(world: World) -> Decimal:
    """A MINI call's worst cost: what each budget here is set to, so it covers one call."""
    world.fake.script("gpt-5-mini", usage=USAGE)
    _, size = post_raw(world, MINI, world.key)
    return mini_reservation(size, 1000)


def refusal(message: str) -> dict[str, object]:
    return {"message": message, "type": "insufficient_quota", "param": None,
            "code": "insufficient_credits"}  # fmt: skip


@pytest.mark.parametrize("period", PERIODS)
def test_a_key_budget_refuses_its_key_past_it(world: World, worst: Decimal, period: str) -> None:
    org = make_org("keyed", credits=Decimal(10))
    key, row = make_key(org, name="keyed")
    other, _ = make_key(org, name="other")
    budget(org, period, worst, key=row)

    first, _ = post_raw(world, MINI, key)
    assert drain()
    second, _ = post_raw(world, MINI, key)

    assert first.status_code == 200, first.text
    assert second.status_code == 402, second.text
    whose = f"this key's {period} budget"
    assert second.json()["error"] == refusal(refused(worst, whose, worst, period))
    assert post_raw(world, MINI, other)[0].status_code == 200


@pytest.mark.parametrize("period", PERIODS)
def test_a_member_budget_holds_every_key_they_created(
    world: World, worst: Decimal, period: str
) -> None:
    org = make_org("members", credits=Decimal(10))
    first_key, _, alice = member_key(org, "alice")
    second_key, _ = make_key(org, name="alice-2", created_by=alice)
    bobs, _, _ = member_key(org, "bob")
    budget(org, period, worst, member=alice)

    first, _ = post_raw(world, MINI, first_key)
    assert drain()
    second, _ = post_raw(world, MINI, second_key)

    assert first.status_code == 200, first.text
    assert second.status_code == 402, second.text
    whose = f"the {period} budget of the member who created this key"
    assert second.json()["error"] == refusal(refused(worst, whose, worst, period))
    assert post_raw(world, MINI, bobs)[0].status_code == 200


@pytest.mark.parametrize("period", PERIODS)
def test_an_organization_budget_holds_all_its_keys(
    world: World, worst: Decimal, period: str
) -> None:
    org = make_org("capped", credits=Decimal(10))
    first_key, _ = make_key(org, name="one")
    second_key, _, _ = member_key(org, "carol")
    budget(org, period, worst)

    first, _ = post_raw(world, MINI, first_key)
    assert drain()
    second, _ = post_raw(world, MINI, second_key)

    assert first.status_code == 200, first.text
    assert second.status_code == 402, second.text
    whose = f"the organization's {period} budget"
    assert second.json()["error"] == refusal(refused(worst, whose, worst, period))
    assert post_raw(world, MINI, world.key)[0].status_code == 200  # another organization


def test_the_tightest_of_the_budgets_over_a_call_refuses_it(world: World, worst: Decimal) -> None:
    """A key under its own daily budget, its member's weekly and its organization's monthly:
    the one with the least left is named. Each call costs about half its worst."""
    org = make_org("layers", credits=Decimal(10))
    key, row, alice = member_key(org, "alice")
    budget(org, BudgetPeriod.DAILY, worst * 3, key=row)
    budget(org, BudgetPeriod.WEEKLY, worst * 2, member=alice)
    budget(org, BudgetPeriod.MONTHLY, worst * 4)

    answers = [post_raw(world, MINI, key)[0] for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 402]
    whose = "the weekly budget of the member who created this key"
    assert answers[3].json()["error"]["message"] == refused(worst, whose, worst * 2, "weekly")
