"""While Redis is down, each process holds calls to their budgets on its own counters: the
spend it loads from the ledger (what was stored before the outage), the charges of its own
calls, and the reservations Redis held when last read. Redis is a server of the test's own,
killed for real."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum

from accounts.models import ApiKey, BudgetPeriod, Organization
from billing.models import Generation
from gateway.catalog.state import STATE
from tests.billing.admission.test_admission import MINI, mini_reservation, post_raw
from tests.billing.admission.test_fallback_admission import back_and_stored, reservations
from tests.billing.budgets.helpers import budget, refused
from tests.billing.budgets.test_scopes import USAGE
from tests.billing.conftest import World, redis_of_its_own
from tests.conftest import make_key, make_org
from tests.gateway.calls import wait_recorded
from tests.stores import RedisServer, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_server(settings: Any) -> Iterator[RedisServer]:
    """A Redis of the test's own; once it fails, the breaker stays open for the whole test."""
    with redis_of_its_own(settings, cooldown=60) as server:
        yield server


def budgeted(world: World) -> tuple[Organization, str, ApiKey, Decimal]:
    """An organization with credit to spare, and a key whose daily budget is twice a call's
    worst cost (each call costs about half of it); that worst cost."""
    world.fake.script("gpt-5-mini", usage=USAGE)
    _, size = post_raw(world, MINI, world.key)
    worst = mini_reservation(size, 1000)
    org = make_org("outage", credits=Decimal(10))
    key, row = make_key(org, name="outage")
    budget(org, BudgetPeriod.DAILY, worst * 2, key=row)
    return org, key, row, worst


def test_the_fallback_store_holds_a_budget_with_what_was_spent_before_the_outage(
    world: World, redis_server: RedisServer, settings: Any
) -> None:
    """The key's daily budget is twice a call's worst cost and each call costs about half of
    it: one call on Redis and two during the outage fit; the next does not, which it would
    were the call made before the outage not counted."""
    _, key, row, worst = budgeted(world)
    before, _ = post_raw(world, MINI, key)
    assert before.status_code == 200, before.text
    wait_recorded(before.headers["x-momor-request-id"])

    redis_server.kill()
    during = [post_raw(world, MINI, key)[0] for _ in range(3)]

    assert [a.status_code for a in during] == [200, 200, 402]
    message = refused(worst, "this key's daily budget", worst * 2, "daily")
    assert during[2].json()["error"]["message"] == message
    back_and_stored(redis_server, settings)
    spent = Generation.objects.filter(api_key=row).aggregate(spent=Sum("cost"))["spent"]
    assert spent <= worst * 2


def test_a_call_settled_on_redis_is_not_also_held_as_the_reservation_last_read_there(
    world: World, redis_server: RedisServer, settings: Any
) -> None:
    """Redis's reservations are read while the first call is under way; the call then ends and
    Redis dies before it is read again. The budget counts that call's charge, not its
    reservation as well: two more calls fit, the third does not."""
    org, key, _, _ = budgeted(world)
    world.fake.script("gpt-5-mini", usage=USAGE, delay_first_byte=1)
    answers: list[Any] = []
    slow = threading.Thread(target=lambda: answers.append(post_raw(world, MINI, key)[0]))
    slow.start()
    wait_until(lambda: reservations(redis_server, org) == 1, 10, "the call's reservation")
    STATE.refresh_now()  # reads Redis's reservations, the call's among them
    STATE.pause()
    slow.join(30)
    assert answers and answers[0].status_code == 200, answers
    wait_recorded(answers[0].headers["x-momor-request-id"])

    world.fake.script("gpt-5-mini", usage=USAGE)
    redis_server.kill()
    during = [post_raw(world, MINI, key)[0] for _ in range(3)]

    assert [a.status_code for a in during] == [200, 200, 402]
    STATE.paused = False
    back_and_stored(redis_server, settings)


def test_a_second_outage_counts_what_was_spent_on_redis_since_the_first(
    world: World, redis_server: RedisServer, settings: Any
) -> None:
    """A call during a first outage, one on Redis once it is back, then a second outage: its
    first call fits beside the two before it, its second does not, which it would were the
    spend of the first outage kept without the call made on Redis in between."""
    _, key, row, worst = budgeted(world)
    redis_server.kill()
    assert post_raw(world, MINI, key)[0].status_code == 200
    back_and_stored(redis_server, settings)
    between, _ = post_raw(world, MINI, key)
    assert between.status_code == 200, between.text
    wait_recorded(between.headers["x-momor-request-id"])
    STATE.refresh_now()  # reads Redis again, as every refresh does while it answers

    redis_server.kill()
    during = [post_raw(world, MINI, key)[0] for _ in range(2)]

    assert [a.status_code for a in during] == [200, 402]
    back_and_stored(redis_server, settings)
    spent = Generation.objects.filter(api_key=row).aggregate(spent=Sum("cost"))["spent"]
    assert spent <= worst * 2
