"""Alerts as an organization receives them, in production mode (a gateway, Redis, a Celery
worker): a budget's 50 %, 80 % and 100 % each reach a webhook receiver on loopback once, signed
with the endpoint's secret; a receiver that is down for a minute gets the event once it is back;
the owners and admins get the e-mail through a real SMTP server."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import pytest

from accounts.models import BudgetPeriod, Organization, Role
from alerts.models import (
    AlertEvent,
    AlertKind,
    AlertRule,
    Delivery,
    DeliveryStatus,
    WebhookEndpoint,
)
from tests.alerts.conftest import Mailbox, Receiver, start_alerts_worker
from tests.billing.admission.test_admission import MINI, mini_reservation, post_raw
from tests.billing.budgets.helpers import budget
from tests.billing.conftest import World
from tests.conftest import make_key, make_org, make_user
from tests.processes import Worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]

SECRET = "whsec_test-secret-of-the-endpoint"


def endpoint(org: Organization, url: str) -> WebhookEndpoint:
    hook = WebhookEndpoint(organization=org, url=url)
    hook.set_secret(SECRET)
    hook.save()
    return hook


def delivered(hook: WebhookEndpoint) -> Delivery:
    """The endpoint's one delivery, once its try is written (after the answer was read)."""
    deadline = time.monotonic() + 30
    while (found := Delivery.objects.get(endpoint=hook)).status != DeliveryStatus.DELIVERED:
        assert time.monotonic() < deadline, "the delivery was never marked delivered"
        time.sleep(0.05)
    return found


def exact_cost(world: World) -> Decimal:
    """What each MINI call costs from now on: exactly its reservation (a call of the world's
    own organization sizes the body)."""
    _, size = post_raw(world, MINI, world.key)
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": size // 2 + 1,
                                           "completion_tokens": MINI["max_tokens"]})  # fmt: skip
    return mini_reservation(size, int(MINI["max_tokens"]))


def calls(world: World, key: str, count: int) -> None:
    for _ in range(count):
        answer, _ = post_raw(world, MINI, key)
        assert answer.status_code == 200, answer.text


@pytest.mark.timeout(240)
def test_each_budget_threshold_reaches_the_webhook_once_signed(
    world: World, receiver: Receiver, alerts_worker: Worker
) -> None:
    org = make_org("alerting", credits=Decimal(10))
    key, row = make_key(org, name="team")
    endpoint(org, receiver.url)
    budget(org, BudgetPeriod.DAILY, exact_cost(world) * 10, key=row)

    calls(world, key, 5)
    receiver.wait_for(1, 60)
    calls(world, key, 3)
    receiver.wait_for(2, 60)
    calls(world, key, 2)
    receiver.wait_for(3, 60)
    refused, _ = post_raw(world, MINI, key)
    time.sleep(3)  # ten checks: none fires again

    assert refused.status_code == 402
    events = receiver.events()
    assert [e["data"]["threshold_percent"] for e in events] == [50.0, 80.0, 100.0]
    assert {e["type"] for e in events} == {"budget.threshold_reached"}
    assert [e["data"]["percent"] for e in events] == [50.0, 80.0, 100.0]
    assert events[2]["data"]["budget"]["key"] == row.pk
    assert events[2]["data"]["budget"]["period"] == "daily"
    assert events[2]["organization"]["slug"] == "alerting"
    assert len({e["id"] for e in events}) == 3
    assert all(r.signed_by(SECRET) for r in receiver.taken)
    assert not any(r.signed_by("whsec_another") for r in receiver.taken)
    assert {r.headers["momor-event-type"] for r in receiver.taken} == {"budget.threshold_reached"}
    assert [r.headers["momor-event-id"] for r in receiver.taken] == [e["id"] for e in events]
    assert all(r.headers["content-type"] == "application/json" for r in receiver.taken)


@pytest.mark.timeout(300)
def test_a_receiver_down_for_a_minute_gets_the_event_once_it_is_back(
    world: World, receiver: Receiver, alerts_worker: Worker
) -> None:
    org = make_org("lowfunds", credits=Decimal(3))
    hook = endpoint(org, receiver.url)
    receiver.down = True
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=5, email=False)

    time.sleep(60)  # the receiver is down for a minute
    assert len(receiver.refused) >= 3, "the worker kept trying while it was down"
    receiver.down = False
    receiver.wait_for(1, 120)
    delivery = delivered(hook)

    (event,) = receiver.events()
    assert event["type"] == "balance.low"
    assert Decimal(event["data"]["balance"]) == 3
    assert Decimal(event["data"]["threshold"]) == 5
    assert receiver.taken[0].signed_by(SECRET)
    tries = list(delivery.tries.order_by("number"))
    assert [t.status_code for t in tries] == [503] * (len(tries) - 1) + [200]
    assert tries[0].answer == "down for maintenance"
    assert tries[-1].answer == '{"received": true}'
    assert [t.number for t in tries] == list(range(1, len(tries) + 1))
    assert {r.body for r in receiver.refused} == {receiver.taken[0].body}


@pytest.mark.timeout(240)
def test_owners_and_admins_get_the_alert_by_email(
    world: World, mailbox: Mailbox, alerts_worker: Worker
) -> None:
    org = make_org("mailed", credits=Decimal(2))
    for name, role in [("olga", Role.OWNER), ("adam", Role.ADMIN), ("mel", Role.MEMBER)]:
        user = make_user(name, org, role=role)
        user.email = f"{name}@mailed.example"
        user.save()
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=5)

    deadline = time.monotonic() + 60
    while not mailbox.messages:
        assert time.monotonic() < deadline, "no mail arrived"
        time.sleep(0.1)
    time.sleep(2)

    (mail,) = mailbox.messages
    assert sorted(mail.rcpt_tos) == ["adam@mailed.example", "olga@mailed.example"]
    assert mail.mail_from == "alerts@momor.example"
    text = mail.content.decode()
    assert "The balance is 2.00 USD, below 5.00 USD" in text
    assert "balance.low" in text


@pytest.mark.timeout(300)
def test_a_worker_killed_mid_try_leaves_the_delivery_to_the_next_worker(
    world: World, receiver: Receiver, mailbox: Mailbox, tmp_path: Path
) -> None:
    """SIGKILL while the endpoint is still answering: the try's lease runs out and another
    worker makes the next try; the event is one, its id the same in each request."""
    quick = {"MOMOR_WEBHOOK_TIMEOUT_SECONDS": "2"}
    first = start_alerts_worker(mailbox, tmp_path, **quick)
    try:
        org = make_org("killed", credits=Decimal(1))
        hook = endpoint(org, receiver.url)
        receiver.slow = 30
        AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=5, email=False)
        deadline = time.monotonic() + 60
        while not receiver.arrived:
            assert time.monotonic() < deadline, "the first try never arrived"
            time.sleep(0.05)
        first.kill()
    finally:
        first.close()
    receiver.slow = 0
    second = start_alerts_worker(mailbox, tmp_path, **quick)
    try:
        receiver.wait_for(1, 90)
        delivery = delivered(hook)
    finally:
        second.close()

    tries = list(delivery.tries.order_by("number"))
    # the killed try left no row (or, had its time-out come first, a failed one)
    assert tries[-1].ok and tries[-1].number >= 2
    assert not any(t.ok for t in tries[:-1])
    assert AlertEvent.objects.filter(organization=org).count() == 1
    ids = {r.event["id"] for r in receiver.arrived}
    assert len(receiver.arrived) >= 2 and len(ids) == 1
    assert all(r.signed_by(SECRET) for r in receiver.arrived)
