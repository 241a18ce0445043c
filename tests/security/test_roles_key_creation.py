"""Attacker-style: a member creating a key with limits looser than a member may later set.
What a member may create is no more than what they may later set: a new key's limits are at
least as tight as its defaults (a rate limit no higher than MOMOR_RATE_LIMIT_PER_MINUTE; any
credit limit or expiry, since each tightens none), in the UI and the management API alike; an
admin sets any limit within its column. A limit past its column is refused at every edge,
never a 500 or a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import ApiKey, Role
from tests.child_process import manage
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import Browser, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

DEFAULT = 60  # MOMOR_RATE_LIMIT_PER_MINUTE in these tests


@pytest.fixture
def acme(gateway: str, settings: Any) -> Any:
    """Alice owns acme; bob, a member, has a key with a rate limit of 5."""
    settings.MOMOR_RATE_LIMIT_PER_MINUTE = DEFAULT
    acme = make_org("acme")
    person("alice", acme, Role.OWNER)
    make_key(acme, name="bobs", created_by=person("bob", acme), rate_limit=5)
    return acme


def new_keys() -> list[tuple[str, int | None]]:
    return list(ApiKey.objects.exclude(name="bobs").values_list("name", "rate_limit"))


def browser_of(gateway: str, username: str) -> Iterator[Browser]:
    browser = Browser(gateway)
    assert browser.sign_in(username).status_code == 302
    yield browser
    browser.close()


@pytest.fixture
def bob(gateway: str, acme: Any) -> Iterator[Browser]:
    yield from browser_of(gateway, "bob")


@pytest.fixture
def alice(gateway: str, acme: Any) -> Iterator[Browser]:
    yield from browser_of(gateway, "alice")


@pytest.mark.parametrize(
    "limits",
    [{"rate_limit": DEFAULT + 1}, {"rate_limit": 2_147_483_647}, {"name": "x", "rate_limit": 1000}],
    ids=["one-over-the-default", "the-columns-most", "named"],
)
def test_a_member_cannot_create_a_key_looser_than_the_default_through_the_api(
    bob: Browser, limits: dict[str, Any]
) -> None:
    response = bob.api("POST", "keys/", limits)
    assert response.status_code == 403, response.text
    assert "only admins raise or lift a key's rate limit" in response.json()["detail"]
    assert new_keys() == []


def test_a_member_cannot_create_a_key_looser_than_the_default_in_the_ui(bob: Browser) -> None:
    response = bob.post("/keys/", {"name": "loose", "rate_limit": str(DEFAULT + 1)})
    assert response.status_code == 400
    assert "only admins raise or lift a key&#x27;s rate limit" in response.text
    assert new_keys() == []


def test_a_member_creates_keys_as_tight_as_they_like(bob: Browser) -> None:
    soon = (timezone.now() + timedelta(days=1)).isoformat()
    limits = {"rate_limit": DEFAULT, "credit_limit": "999999999.999999999", "expires_at": soon}
    assert bob.api("POST", "keys/", {"name": "api", **limits}).status_code == 201
    page = bob.post("/keys/", {"name": "ui", "rate_limit": "1", "credit_limit": "0"})
    assert page.status_code == 200
    assert sorted(new_keys()) == [("api", DEFAULT), ("ui", 1)]


def test_an_admin_sets_any_limit_within_its_column(alice: Browser) -> None:
    response = alice.api("POST", "keys/", {"name": "api", "rate_limit": 2_147_483_647})
    assert response.status_code == 201, response.text
    assert alice.post("/keys/", {"name": "ui", "rate_limit": "1000"}).status_code == 200
    assert sorted(new_keys()) == [("api", 2_147_483_647), ("ui", 1000)]


@pytest.mark.parametrize("who", ["alice", "bob"])
@pytest.mark.parametrize("rate", [10**30, 2**31, 3_000_000_000], ids=["1e30", "2^31", "3e9"])
def test_a_rate_limit_past_its_column_is_a_400_naming_it(
    gateway: str, acme: Any, who: str, rate: int
) -> None:
    bobs = ApiKey.objects.get(name="bobs")
    for browser in browser_of(gateway, who):
        for method, path in [("POST", "keys/"), ("PATCH", f"keys/{bobs.pk}/")]:
            response = browser.api(method, path, {"rate_limit": rate})
            assert response.status_code == 400, response.text
            assert list(response.json()) == ["rate_limit"]
        page = browser.post("/keys/", {"name": "huge", "rate_limit": str(rate)})
        assert page.status_code == 400
        assert "Ensure this value is less than or equal to 2147483647." in page.text
        limits = browser.post(f"/keys/{bobs.pk}/limits/", {"rate_limit": str(rate)})
        assert limits.status_code == 302
    assert new_keys() == []
    assert ApiKey.objects.get(name="bobs").rate_limit == 5


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "99999999999999999999",
            "the rate limit must be at most 2,147,483,647 requests per minute",
        ),
        ("2147483648", "the rate limit must be at most 2,147,483,647 requests per minute"),
        ("NaN", "--rate-limit must be a whole number of requests per minute, not 'NaN'"),
    ],
    ids=["huge", "2^31", "nan"],
)
def test_create_api_key_refuses_a_rate_limit_past_its_column_in_one_line(
    acme: Any, value: str, message: str
) -> None:
    done = manage("create_api_key", "--org", "acme", "--rate-limit", value)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"CommandError: {message}\n")
    assert new_keys() == []
