"""Budgets on the members' pages: each key's and member's budget, and the organization's,
shown with what it spent this period against its amount and a bar; owners and admins set and
lift them there; members see their keys' budgets and may not change them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Budget, Organization, Role
from accounts.periods import window
from tests.conftest import make_key, make_user
from tests.ui_helpers import make_generation, signed_in

pytestmark = pytest.mark.django_db


def resets(period: str) -> str:
    ends = window(period, timezone.now()).resets_at
    assert ends is not None
    return f"resets {ends:%Y-%m-%d %H:%M} UTC"


def test_an_admin_sets_a_keys_budget_and_sees_it_spent(alice: User, acme: Organization) -> None:
    """Spent this period: a call of yesterday is not in the daily budget's bar."""
    _, key = make_key(acme, name="app", created_by=alice)
    make_generation(acme, key=key, cost="1.5")
    make_generation(acme, key=key, cost="9", created_at=timezone.now() - timedelta(days=1))
    client = signed_in(alice)

    saved = client.post("/budgets/", {"key": key.pk, "period": "daily", "amount": "6"})
    page = client.get("/keys/").content.decode()

    assert saved.status_code == 302 and saved["Location"] == "/keys/"
    assert Budget.objects.get(api_key=key).amount == Decimal(6)
    assert "Daily: $1.50 of $6.00" in page
    assert 'max="100" value="25"' in page
    assert resets("daily") in page


def test_a_member_sees_their_keys_budget_and_may_not_change_it(
    acme: Organization, alice: User, bob: User
) -> None:
    _, key = make_key(acme, name="bobs", created_by=bob)
    signed_in(alice).post("/budgets/", {"key": key.pk, "period": "total", "amount": "2"})
    client = signed_in(bob)

    page = client.get("/keys/").content.decode()
    refused = client.post("/budgets/", {"key": key.pk, "period": "total", "amount": "200"})

    assert "Total: $0.00 of $2.00" in page and "never resets" in page
    assert "Save budget" not in page
    assert refused.status_code == 403
    assert Budget.objects.get(api_key=key).amount == Decimal(2)


def test_the_members_page_holds_members_and_organization_budgets(
    acme: Organization, alice: User
) -> None:
    carol = make_user("carol", acme, Role.ADMIN)
    _, carols = make_key(acme, name="carols", created_by=carol)
    make_generation(acme, key=carols, cost="3")
    client = signed_in(carol)

    client.post(
        "/budgets/", {"member": carol.pk, "period": "weekly", "amount": "4", "back": "members"}
    )
    saved = client.post("/budgets/", {"period": "monthly", "amount": "12", "back": "members"})
    page = client.get("/members/").content.decode()

    assert saved["Location"] == "/members/"
    assert "Weekly: $3.00 of $4.00" in page and 'value="75"' in page
    assert "Monthly: $3.00 of $12.00" in page and resets("monthly") in page


def test_an_empty_amount_lifts_the_budget(alice: User, acme: Organization) -> None:
    client = signed_in(alice)
    client.post("/budgets/", {"period": "weekly", "amount": "5"})
    client.post("/budgets/", {"period": "weekly", "amount": ""})
    assert not Budget.objects.filter(organization=acme).exists()


def test_a_key_or_member_of_another_organization_is_not_found(
    alice: User, acme: Organization, globex: Organization
) -> None:
    _, theirs = make_key(globex, name="theirs")
    erin = make_user("erin", globex)
    client = signed_in(alice)
    assert (
        client.post("/budgets/", {"key": theirs.pk, "period": "daily", "amount": "1"}).status_code
        == 404
    )
    assert (
        client.post("/budgets/", {"member": erin.pk, "period": "daily", "amount": "1"}).status_code
        == 404
    )
    assert not Budget.objects.exists()


def budgeted_members(org: Organization, start: int, count: int) -> None:
    """Members, each with a key, a call's cost and a weekly budget; and key budgets."""
    for n in range(start, start + count):
        person = make_user(f"person{n}", org)
        _, key = make_key(org, name=f"key{n}", created_by=person)
        make_generation(org, key=key, cost="0.5")
        Budget.objects.create(organization=org, scope="member", member=person, period="weekly",
                              amount=Decimal(5))  # fmt: skip
        Budget.objects.create(organization=org, scope="key", api_key=key, period="daily",
                              amount=Decimal(1))  # fmt: skip


@pytest.mark.parametrize("path", ["/members/", "/keys/", "/api/manage/budgets/"])
def test_budgets_are_read_in_the_same_queries_however_many(
    alice: User, acme: Organization, path: str
) -> None:
    client = signed_in(alice)
    Budget.objects.create(organization=acme, scope="organization", period="monthly",
                          amount=Decimal(50))  # fmt: skip
    budgeted_members(acme, 0, 2)
    client.get(path)  # the session's first request may save it
    with CaptureQueriesContext(connection) as few:
        assert client.get(path).status_code == 200
    budgeted_members(acme, 2, 30)
    with CaptureQueriesContext(connection) as many:
        page = client.get(path)
    assert page.status_code == 200
    assert len(many) == len(few)
