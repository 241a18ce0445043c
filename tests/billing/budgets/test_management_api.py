"""Budgets in the management API (`/api/manage/budgets/`): an admin's management key sets one
over HTTP and the gateway holds calls to it at once, reads where it stands in its window,
raises it and lifts it; members may not; what is not a budget is refused with 400."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import Budget, KeyKind, Organization, Role
from tests.billing.admission.test_admission import MINI, mini_reservation, post_raw
from tests.billing.budgets.helpers import member_key
from tests.billing.budgets.test_scopes import USAGE
from tests.billing.conftest import World
from tests.billing.test_management_api import as_member, body
from tests.conftest import make_key, make_org, make_user
from tests.gateway.calls import wait_recorded

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/api/manage/budgets/"


def manage(world: World, admin: str, method: str, path: str = "", **json: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {admin}"}
    return httpx.request(method, world.url + BASE + path, json=json or None, headers=headers,
                         timeout=30)  # fmt: skip


def until_served(world: World, key: str) -> httpx.Response:
    """A call, made again until the gateway has the budget's change (its refresh)."""
    deadline = time.monotonic() + 10
    while (answer := post_raw(world, MINI, key)[0]).status_code == 402:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)
    return answer


def test_a_budget_set_through_the_api_holds_the_keys_calls(world: World) -> None:
    world.fake.script("gpt-5-mini", usage=USAGE)
    _, size = post_raw(world, MINI, world.key)
    worst = mini_reservation(size, 1000)
    org = make_org("managed", credits=Decimal(10))
    admin, _ = make_key(org, name="ops", kind=KeyKind.MANAGEMENT)
    key, row = make_key(org, name="app")

    made = manage(world, admin, "POST", key=row.pk, period="daily", amount=str(worst))
    first, _ = post_raw(world, MINI, key)
    wait_recorded(first.headers["x-momor-request-id"])
    second, _ = post_raw(world, MINI, key)
    listed = manage(world, admin, "GET")

    assert made.status_code == 201, made.text
    assert (first.status_code, second.status_code) == (200, 402)
    cost = Decimal(str(first.json()["usage"]["cost"]))
    [shown] = listed.json()
    assert shown == {
        "id": made.json()["id"], "scope": "key", "key": row.pk, "member": None,
        "period": "daily", "amount": f"{worst:f}", "spent": f"{cost:.9f}",
        "remaining": f"{worst - cost:.9f}", "resets_at": made.json()["resets_at"],
    }  # fmt: skip
    assert shown["resets_at"].endswith("T00:00:00Z")

    raised = manage(world, admin, "PATCH", f"{shown['id']}/", amount=str(worst * 3))
    assert raised.status_code == 200, raised.text
    assert until_served(world, key).status_code == 200
    lifted = manage(world, admin, "DELETE", f"{shown['id']}/")
    assert lifted.status_code == 204
    assert not Budget.objects.filter(organization=org).exists()


@pytest.fixture
def carol(acme: Organization) -> User:
    return make_user("carol", acme, Role.ADMIN)


def set_budget(client: Client, **given: Any) -> Any:
    return client.post(BASE, given, content_type="application/json")


def test_setting_a_budget_again_changes_its_amount(acme: Organization, carol: User) -> None:
    client = as_member(carol, acme)
    first = set_budget(client, period="monthly", amount="50")
    again = set_budget(client, period="monthly", amount="80")

    assert (first.status_code, again.status_code) == (201, 200)
    assert body(again)["id"] == body(first)["id"]
    assert (body(again)["scope"], body(again)["amount"]) == ("organization", "80.000000000")
    assert Budget.objects.get(organization=acme).amount == Decimal(80)


def test_a_member_budget_names_the_member(acme: Organization, alice: User) -> None:
    _, _, dave = member_key(acme, "dave")
    answer = set_budget(as_member(alice, acme), member=dave.pk, period="weekly", amount="5")
    assert answer.status_code == 201, answer.content
    assert (body(answer)["scope"], body(answer)["member"]) == ("member", dave.pk)


def test_members_neither_read_nor_set_budgets(acme: Organization, bob: User) -> None:
    client = as_member(bob, acme)
    assert client.get(BASE).status_code == 403
    assert set_budget(client, period="daily", amount="1").status_code == 403
    assert not Budget.objects.exists()


@pytest.mark.parametrize(
    ("given", "detail"),
    [
        ({"period": "hourly", "amount": "1"}, None),
        ({"period": "daily", "amount": "-1"}, None),
        ({"period": "daily", "amount": "1000000000"}, None),
        ({"period": "daily", "amount": "1", "key": 0}, "the key is not the organization's"),
        ({"period": "daily", "amount": "1", "member": 0}, "the member is not the organization's"),
    ],
    ids=["period", "negative", "past-the-ledger", "no-such-key", "no-such-member"],
)
def test_what_is_not_a_budget_is_refused(
    acme: Organization, carol: User, given: dict[str, Any], detail: str | None
) -> None:
    answer = set_budget(as_member(carol, acme), **given)
    assert answer.status_code == 400, answer.content
    if detail is not None:
        assert body(answer) == {"detail": detail}
    assert not Budget.objects.exists()


def test_another_organizations_key_and_member_are_refused(
    acme: Organization, globex: Organization, carol: User
) -> None:
    _, theirs = make_key(globex, name="theirs")
    _, _, erin = member_key(globex, "erin")
    client = as_member(carol, acme)
    for given in ({"key": theirs.pk}, {"member": erin.pk}):
        answer = set_budget(client, period="daily", amount="1", **given)
        assert answer.status_code == 400, answer.content
    assert not Budget.objects.exists()


def test_a_key_reads_with_openrouters_limit_and_usage_fields(world: World) -> None:
    """Its limit is the one of its own with the least left (its daily budget here, not its
    credit limit), and its usage that of the UTC day, week and month under way."""
    world.fake.script("gpt-5-mini", usage=USAGE)
    org = make_org("openrouter", credits=Decimal(10))
    admin, _ = make_key(org, name="ops", kind=KeyKind.MANAGEMENT)
    key, row = make_key(org, name="app", credit_limit=Decimal(5))
    make_key(org, name="plain")
    manage(world, admin, "POST", key=row.pk, period="daily", amount="1")
    served, _ = post_raw(world, MINI, key)
    wait_recorded(served.headers["x-momor-request-id"])
    cost = float(served.json()["usage"]["cost"])

    limited = manage(world, admin, "GET", "").json()
    keys = httpx.get(world.url + "/api/manage/keys/", timeout=30,
                     headers={"authorization": f"Bearer {admin}"}).json()  # fmt: skip

    assert limited[0]["spent"] == f"{Decimal(str(cost)):.9f}"
    fields = ["limit", "limit_remaining", "limit_reset", "usage", "usage_daily", "usage_weekly",
              "usage_monthly"]  # fmt: skip
    by_name = {one["name"]: {field: one[field] for field in fields} for one in keys}
    assert by_name["app"] == {
        "limit": 1.0, "limit_remaining": pytest.approx(1 - cost), "limit_reset": "daily",
        "usage": cost, "usage_daily": cost, "usage_weekly": cost, "usage_monthly": cost,
    }  # fmt: skip
    assert by_name["plain"] == dict.fromkeys(fields[:3]) | dict.fromkeys(fields[3:], 0.0)
