"""Each kind of rule fires once per episode: a budget's share once in each of its windows (a
window that rolls over fires it again), a balance below its amount, a provider's error rate over
its level and dead letters present each when the condition starts to hold, and again only
after it has stopped; a new organization starts with 50 %, 80 % and 100 % of any budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from accounts.models import BudgetPeriod, Organization
from alerts.firing import check_all
from alerts.models import AlertEvent, AlertKind, AlertRule, Channel, Delivery
from alerts.retention import purge
from billing.ledger.credits import credits_post
from billing.models import DailyRollup, DeadLetter, EntryKind
from billing.recording.hand_off import drain
from tests.billing.admission.test_admission import MINI, post_raw
from tests.billing.budgets.helpers import budget
from tests.billing.conftest import World
from tests.conftest import make_key, make_org, make_user

pytestmark = pytest.mark.django_db(transaction=True)

NOON = datetime(2026, 12, 9, 12, tzinfo=UTC)


def rule(org: Organization, kind: str, threshold: int | str, email: bool = False) -> AlertRule:
    return AlertRule.objects.create(
        organization=org, kind=kind, threshold=Decimal(threshold), email=email
    )


def spend(org: Organization, day: datetime, cost: str) -> None:
    """A day's usage row of its own (one per model, so each call of this adds one)."""
    model = f"m{DailyRollup.objects.count()}"
    DailyRollup.objects.create(
        organization=org, day=day.date(), model=model, provider="p", calls=1, cost=Decimal(cost)
    )


def fired(org: Organization, kind: str | None = None) -> list[AlertEvent]:
    events = AlertEvent.objects.filter(organization=org).order_by("id")
    return list(events.filter(type=kind) if kind else events)


def test_a_new_organization_has_the_default_budget_rules() -> None:
    org = make_org("fresh")
    rules = AlertRule.objects.filter(organization=org)
    assert sorted((r.kind, r.threshold, r.email) for r in rules) == [
        (AlertKind.BUDGET, Decimal(share), True) for share in (50, 80, 100)
    ]


def test_a_budget_fires_each_threshold_once_a_window_and_again_in_the_next() -> None:
    org = make_org("windowed")
    budget(org, BudgetPeriod.DAILY, Decimal(10))
    spend(org, NOON, "4.99")
    assert check_all(NOON) == []

    spend(org, NOON - timedelta(hours=11), "0.01")  # 50 % to the cent
    first = check_all(NOON)
    again = check_all(NOON + timedelta(hours=11))
    spend(org, NOON + timedelta(days=1), "8")
    tomorrow = check_all(NOON + timedelta(days=1))

    assert [e.data["threshold_percent"] for e in first] == [50.0]
    assert again == []
    assert [e.data["threshold_percent"] for e in tomorrow] == [50.0, 80.0]
    assert tomorrow[0].data["budget"]["resets_at"] == "2026-12-11T00:00:00Z"
    assert tomorrow[0].data["spent"] == "8.000000000"
    assert "The organization's daily budget reached 50 %" in tomorrow[0].summary


def test_a_budget_changed_in_its_window_does_not_fire_a_threshold_twice() -> None:
    org = make_org("changed")
    row = budget(org, BudgetPeriod.MONTHLY, Decimal(10))
    spend(org, NOON, "6")
    assert len(check_all(NOON)) == 1
    row.amount = Decimal(7)
    row.save()
    assert [e.data["threshold_percent"] for e in check_all(NOON)] == [80.0]


def test_a_total_budget_fires_once_ever() -> None:
    org = make_org("total")
    budget(org, BudgetPeriod.TOTAL, Decimal(1))
    spend(org, NOON - timedelta(days=400), "1")
    assert len(check_all(NOON)) == 3
    assert check_all(NOON + timedelta(days=40)) == []


def test_a_low_balance_fires_once_until_a_top_up_lifts_it() -> None:
    org = make_org("balance", credits=Decimal(3))
    rule(org, AlertKind.BALANCE, 5)
    first, still = check_all(), check_all()
    credits_post(organization_id=org.pk, amount=Decimal(10), kind=EntryKind.TOPUP)
    lifted = check_all()
    credits_post(organization_id=org.pk, amount=Decimal(-9), kind=EntryKind.ADJUSTMENT)
    low_again = check_all()

    assert [e.type for e in first] == ["balance.low"]
    assert first[0].data["balance"] == "3.000000000"
    assert still == lifted == []
    assert [e.data["balance"] for e in low_again] == ["4.000000000"]


def test_dead_letters_fire_when_they_appear_and_again_after_they_were_cleared() -> None:
    org = make_org("parked")
    rule(org, AlertKind.DEAD_LETTERS, 1)
    assert check_all() == []
    letter = DeadLetter.objects.create(organization_id=org.pk, payload="{}", error="bad row")
    first, still = check_all(), check_all()
    letter.delete()
    assert check_all() == []
    DeadLetter.objects.create(organization_id=org.pk, payload="{}", error="bad row")
    again = check_all()

    assert [(e.type, e.data["count"]) for e in first] == [("dead_letters.present", 1)]
    assert still == []
    assert len(again) == 1


def test_a_providers_error_rate_over_its_level_fires_once(world: World) -> None:
    org = make_org("flaky", credits=Decimal(10))
    key, _ = make_key(org, name="flaky")
    rule(org, AlertKind.ERROR_RATE, 40)
    world.fake.script("gpt-5-mini", fail={"status": 503})
    answers = [post_raw(world, MINI, key)[0].status_code for _ in range(10)]
    assert drain()
    first, still = check_all(), check_all()

    assert set(answers) == {503}
    (event,) = first
    assert event.type == "provider.error_rate_high"
    assert event.data["attempts"] >= 10
    assert event.data["error_rate_percent"] == 100.0
    assert still == []


def test_an_error_rate_needs_ten_tries_in_its_window(world: World) -> None:
    org = make_org("fewtries", credits=Decimal(10))
    key, _ = make_key(org, name="few")
    rule(org, AlertKind.ERROR_RATE, 10)
    world.fake.script("gpt-5-mini", fail={"status": 503})
    for _ in range(3):
        post_raw(world, MINI, key)
    assert drain()
    assert check_all() == []


def test_an_event_goes_to_every_endpoint_and_by_mail_where_its_rule_says() -> None:
    org = make_org("channels", credits=Decimal(1))
    make_user("owner", org, role="owner")
    for url in ("https://a.example/hook", "https://b.example/hook"):
        hook = org.webhooks.model(organization=org, url=url)
        hook.set_secret("whsec_x")
        hook.save()
    rule(org, AlertKind.BALANCE, 5, email=True)
    rule(org, AlertKind.BALANCE, 2, email=False)
    check_all()

    by_rule = {
        e.rule.threshold: sorted(d.channel for d in Delivery.objects.filter(event=e))
        for e in fired(org)
        if e.rule
    }
    assert by_rule == {
        Decimal(5): [Channel.EMAIL, Channel.WEBHOOK, Channel.WEBHOOK],
        Decimal(2): [Channel.WEBHOOK, Channel.WEBHOOK],
    }


def test_a_check_reads_each_kind_once_however_many_organizations(
    django_assert_max_num_queries: Any,
) -> None:
    """Twenty organizations with every kind of rule and a budget each: after the first check
    has fired what holds, a check is a few reads, and no writes."""
    for number in range(20):
        org = make_org(f"org{number}", credits=Decimal(1))
        budget(org, BudgetPeriod.DAILY, Decimal(10))
        spend(org, NOON, "6")
        rule(org, AlertKind.BALANCE, 5)
        rule(org, AlertKind.ERROR_RATE, 50)
        rule(org, AlertKind.DEAD_LETTERS, 1)
        DeadLetter.objects.create(organization_id=org.pk, payload="{}", error="bad row")
    first = check_all(NOON)

    with django_assert_max_num_queries(12):
        again = check_all(NOON)

    assert len(first) == 20 * 3  # the budget's 50 %, the balance, the dead letters
    assert again == []


def test_the_retention_keeps_what_is_still_tried_and_what_would_fire_again() -> None:
    """Past MOMOR_ALERTS_RETENTION_DAYS (90), events and finished deliveries go; a delivery
    still being tried stays with its event, and a total budget's event stays, so the budget
    does not fire again."""
    org = make_org("kept", credits=Decimal(1))
    budget(org, BudgetPeriod.TOTAL, Decimal(1))
    spend(org, NOON, "1")
    rule(org, AlertKind.BALANCE, 5, email=True)
    make_user("owner-kept", org, role="owner")
    fired = check_all(NOON)
    Delivery.objects.filter(event__type="budget.threshold_reached").update(status="delivered")
    AlertEvent.objects.update(created_at=NOON - timedelta(days=91))
    Delivery.objects.update(created_at=NOON - timedelta(days=91))

    gone = purge(NOON)
    left = sorted(AlertEvent.objects.values_list("type", flat=True))

    assert len(fired) == 4  # the total budget's 50, 80 and 100 %, and the balance
    assert gone == 3  # the budget events' three finished deliveries
    assert left == ["balance.low"] + ["budget.threshold_reached"] * 3
    assert check_all(NOON + timedelta(days=1)) == []
    Delivery.objects.update(status="failed")
    purge(NOON)
    assert (
        sorted(AlertEvent.objects.values_list("type", flat=True))
        == ["budget.threshold_reached"] * 3
    )
