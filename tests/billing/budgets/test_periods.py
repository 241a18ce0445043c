"""A budget's period rolls over at its boundary in the UTC calendar: a gateway process whose
clock is moved (libfaketime, reading its offset from a file the test writes) from just before
the end of a day, an ISO week or a month to just after it finds the spent budget whole again,
and refuses past it in the new window, naming the next boundary."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import orjson
import pytest

from accounts.models import BudgetPeriod
from accounts.periods import window
from tests.billing.admission.test_admission import MINI, mini_reservation
from tests.billing.budgets.helpers import budget
from tests.billing.budgets.test_scopes import USAGE
from tests.billing.conftest import World
from tests.conftest import make_key, make_org
from tests.faked_clock import gateway_with_clock

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    """The faked clock of a process: its offset from the machine's, in a file libfaketime reads
    on every call for the time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def set(self, moment: datetime) -> None:
        self.path.write_text(f"{int(moment.timestamp() - time.time()):+d}s")


def gateway_on(clock: Clock, world: World, log: Path) -> AbstractContextManager[str]:
    return gateway_with_clock(
        world, log, FAKETIME_TIMESTAMP_FILE=str(clock.path), FAKETIME_NO_CACHE="1"
    )


def post(url: str, key: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    return httpx.post(url + "/v1/chat/completions", content=orjson.dumps(MINI), headers=headers,
                      timeout=30)  # fmt: skip


def refusal(worst: Decimal, period: str, resets: datetime) -> str:
    return (
        f"Budget exceeded: this call may cost up to ${worst}, more than is left of this key's "
        f"{period} budget of ${worst.normalize():f}. It resets at {resets:%Y-%m-%dT%H:%M:%SZ}."
    )


@pytest.mark.timeout(300)  # a gateway process starts first: 15-60 s when busy
@pytest.mark.parametrize("period", [BudgetPeriod.DAILY, BudgetPeriod.WEEKLY, BudgetPeriod.MONTHLY])
def test_a_spent_budget_is_whole_again_once_its_period_rolls_over(
    world: World, tmp_path: Path, period: str
) -> None:
    world.fake.script("gpt-5-mini", usage=USAGE)
    worst = mini_reservation(len(orjson.dumps(MINI)), 1000)
    org = make_org("periodic", credits=Decimal(10))
    key, row = make_key(org, name="periodic")
    budget(org, period, worst, key=row)
    boundary = window(period, datetime.now(UTC)).resets_at
    assert boundary is not None
    following = window(period, boundary).resets_at
    clock = Clock(tmp_path / "clock")
    clock.set(boundary - timedelta(minutes=1))

    with gateway_on(clock, world, tmp_path / "gateway.log") as url:
        before = [post(url, key), post(url, key)]
        clock.set(boundary + timedelta(minutes=1))
        after = [post(url, key), post(url, key)]

    assert [a.status_code for a in before + after] == [200, 402, 200, 402]
    assert before[1].json()["error"]["message"] == refusal(worst, period, boundary)
    assert after[1].json()["error"]["message"] == refusal(worst, period, following)
