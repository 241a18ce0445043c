"""Attacker-style: a member against the limits an admin set on their key. A member may only
tighten a limit (a lower credit or rate limit, an earlier expiry), through the UI and the
management API alike; raising or lifting one is for admins."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import ApiKey, Role
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import Browser, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def bobs_key(gateway: str) -> ApiKey:
    """Bob's key, on which an admin set a credit limit, a rate limit and an expiry."""
    acme = make_org("acme", credits=Decimal(100))
    person("alice", acme, Role.OWNER)
    bob = person("bob", acme)
    expiry = timezone.now() + timedelta(days=30)
    _, key = make_key(
        acme, name="bobs", created_by=bob, credit_limit=Decimal(5), rate_limit=10, expires_at=expiry
    )
    return key


def browser_of(gateway: str, username: str) -> Iterator[Browser]:
    browser = Browser(gateway)
    assert browser.sign_in(username).status_code == 302
    yield browser
    browser.close()


@pytest.fixture
def bob(gateway: str, bobs_key: ApiKey) -> Iterator[Browser]:
    yield from browser_of(gateway, "bob")


@pytest.fixture
def carol(gateway: str, bobs_key: ApiKey) -> Iterator[Browser]:
    person("carol", bobs_key.organization, Role.ADMIN)
    yield from browser_of(gateway, "carol")


def limits(key: ApiKey) -> tuple[Any, ...]:
    key.refresh_from_db()
    return key.credit_limit, key.rate_limit, key.expires_at


def set_in_ui(browser: Browser, key: ApiKey, credit: str, rate: str) -> str:
    response = browser.post(f"/keys/{key.pk}/limits/", {"credit_limit": credit, "rate_limit": rate})
    assert response.status_code == 302
    return browser.get("/keys/").text


@pytest.mark.parametrize(
    ("credit", "rate"),
    [("", "10"), ("50", "10"), ("5", ""), ("5", "11"), ("", "")],
    ids=["lift-credit", "raise-credit", "lift-rate", "raise-rate", "lift-both"],
)
def test_a_member_cannot_raise_or_lift_limits_in_the_ui(
    bob: Browser, bobs_key: ApiKey, credit: str, rate: str
) -> None:
    before = limits(bobs_key)
    page = set_in_ui(bob, bobs_key, credit, rate)
    assert limits(bobs_key) == before
    assert "only admins raise or lift" in page


def test_a_member_tightens_limits_in_the_ui(bob: Browser, bobs_key: ApiKey) -> None:
    set_in_ui(bob, bobs_key, "2", "3")
    assert limits(bobs_key)[:2] == (Decimal(2), 3)


@pytest.mark.parametrize(
    "change",
    [
        {"credit_limit": None},
        {"credit_limit": "5.000000001"},
        {"rate_limit": None},
        {"rate_limit": 1000},
        {"expires_at": None},
        {"expires_at": "2099-01-01T00:00:00Z"},
        {"name": "renamed", "credit_limit": "1", "rate_limit": 11},
    ],
    ids=[
        "lift-credit",
        "raise-credit",
        "lift-rate",
        "raise-rate",
        "lift-expiry",
        "postpone",
        "one-raised-among-tightened",
    ],
)
def test_a_member_cannot_raise_or_lift_limits_through_the_api(
    bob: Browser, bobs_key: ApiKey, change: dict[str, Any]
) -> None:
    before = limits(bobs_key)
    response = bob.api("PATCH", f"keys/{bobs_key.pk}/", change)
    assert response.status_code == 403, response.text
    assert "only admins raise or lift" in response.json()["detail"]
    assert limits(bobs_key) == before
    assert ApiKey.objects.get(pk=bobs_key.pk).name == "bobs"


def test_a_member_tightens_limits_through_the_api(bob: Browser, bobs_key: ApiKey) -> None:
    sooner = timezone.now() + timedelta(days=1)
    change = {"credit_limit": "1.5", "rate_limit": 2, "expires_at": sooner.isoformat()}
    response = bob.api("PATCH", f"keys/{bobs_key.pk}/", change)
    assert response.status_code == 200, response.text
    assert limits(bobs_key) == (Decimal("1.5"), 2, sooner)


def test_without_an_own_rate_limit_the_deployments_default_binds_a_member(
    bob: Browser, bobs_key: ApiKey, settings: Any
) -> None:
    settings.MOMOR_RATE_LIMIT_PER_MINUTE = 60
    ApiKey.objects.filter(pk=bobs_key.pk).update(rate_limit=None)
    assert bob.api("PATCH", f"keys/{bobs_key.pk}/", {"rate_limit": 1000}).status_code == 403
    assert bob.api("PATCH", f"keys/{bobs_key.pk}/", {"rate_limit": 60}).status_code == 200


def test_an_admin_raises_and_lifts_limits(carol: Browser, bobs_key: ApiKey) -> None:
    change = {"credit_limit": None, "rate_limit": 1000, "expires_at": None}
    assert carol.api("PATCH", f"keys/{bobs_key.pk}/", change).status_code == 200
    assert limits(bobs_key) == (None, 1000, None)
    set_in_ui(carol, bobs_key, "500", "")
    assert limits(bobs_key) == (Decimal(500), None, None)


def test_an_expiry_in_the_past_is_refused(carol: Browser, bobs_key: ApiKey) -> None:
    response = carol.api("PATCH", f"keys/{bobs_key.pk}/", {"expires_at": "2000-01-01T00:00Z"})
    assert response.status_code == 400
