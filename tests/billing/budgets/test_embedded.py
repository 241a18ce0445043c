"""In embedded mode (no Redis), the process's own store holds calls to their budgets: the
spend it loads from the ledger and the charges of its own calls."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from accounts.models import BudgetPeriod
from billing.admission import select
from billing.admission.operations import in_redis
from tests.billing.admission.test_admission import MINI, mini_reservation, post_raw
from tests.billing.budgets.helpers import budget, member_key, refused
from tests.billing.budgets.test_scopes import USAGE
from tests.billing.conftest import World
from tests.conftest import make_org
from tests.gateway.calls import wait_recorded

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def embedded(world: World, settings: Any) -> Iterator[World]:
    """The gateway without REDIS_URL from here on."""
    settings.REDIS_URL = ""
    select.store.cache_clear()
    assert not in_redis()
    yield world
    select.store.cache_clear()


def test_a_member_budget_holds_in_embedded_mode(embedded: World) -> None:
    """The member's weekly budget is twice a call's worst cost, each call costing about half:
    three calls fit, the fourth does not, also once the first calls' spend is read back from
    the ledger."""
    embedded.fake.script("gpt-5-mini", usage=USAGE)
    _, size = post_raw(embedded, MINI, embedded.key)
    worst = mini_reservation(size, 1000)
    org = make_org("embedded", credits=Decimal(10))
    key, _, dana = member_key(org, "dana")
    budget(org, BudgetPeriod.WEEKLY, worst * 2, member=dana)

    answers = [post_raw(embedded, MINI, key)[0] for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 402]
    whose = "the weekly budget of the member who created this key"
    assert answers[3].json()["error"]["message"] == refused(worst, whose, worst * 2, "weekly")
    for served in answers[:3]:
        wait_recorded(served.headers["x-momor-request-id"])
    select.local_store.cache_clear()  # a process started afresh loads the spend from the ledger
    assert post_raw(embedded, MINI, key)[0].status_code == 402
