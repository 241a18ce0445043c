"""Alerts in the management API (`/api/manage/alerts/`), over HTTP with an admin's management
key: rules set, refused when they are no rule and removed; an endpoint made with its secret in
that answer alone, rolled, tested (the receiver gets the event signed with it, and the
endpoint's deliveries show the try), removed; what fired; members and other organizations'
keys kept out."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from accounts.models import KeyKind, Organization, Role
from alerts.delivery import dispatch_due
from alerts.firing import check_all
from alerts.loop import here
from alerts.models import AlertKind, AlertRule, WebhookEndpoint
from tests.alerts.conftest import Receiver
from tests.billing.conftest import World
from tests.conftest import make_key, make_org, make_user
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/api/manage/alerts/"


def admin_key(org: Organization, role: str = Role.ADMIN) -> str:
    user = make_user(f"{role}-{org.slug}", org, role=role)
    plain, _ = make_key(org, name="ops", kind=KeyKind.MANAGEMENT, created_by=user)
    return plain


def call(world: World, key: str, method: str, path: str, **json: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    return httpx.request(method, world.url + BASE + path, json=json or None, headers=headers,
                         timeout=30)  # fmt: skip


def test_rules_are_listed_set_refused_and_removed(world: World) -> None:
    org = make_org("ruled", credits=Decimal(5))
    key = admin_key(org)

    listed = call(world, key, "GET", "rules/")
    made = call(world, key, "POST", "rules/", kind="balance", threshold="10", email=False)
    again = call(world, key, "POST", "rules/", kind="balance", threshold="10")
    wrong = [
        call(world, key, "POST", "rules/", kind="weather", threshold="1"),
        call(world, key, "POST", "rules/", kind="error_rate", threshold="1001"),
        call(world, key, "POST", "rules/", kind="balance", threshold="-1"),
        call(world, key, "POST", "rules/", kind="balance", threshold="1e400"),
        call(world, key, "POST", "rules/", kind="balance"),
    ]
    gone = call(world, key, "DELETE", f"rules/{made.json()['id']}/")

    assert listed.status_code == 200
    assert sorted(Decimal(r["threshold"]) for r in listed.json()) == [50, 80, 100]
    assert {r["kind"] for r in listed.json()} == {"budget"}
    assert made.status_code == 201, made.text
    assert made.json()["kind"] == "balance" and made.json()["email"] is False
    assert again.status_code == 400
    assert again.json() == {"threshold": ["This rule is set already."]}
    assert [w.status_code for w in wrong] == [400] * 5
    assert gone.status_code == 204
    assert not AlertRule.objects.filter(organization=org, kind=AlertKind.BALANCE).exists()


def test_an_endpoints_secret_is_answered_once_and_signs_its_test(
    world: World, receiver: Receiver
) -> None:
    org = make_org("hooked")
    key = admin_key(org, Role.OWNER)

    made = call(world, key, "POST", "webhooks/", url=receiver.url, description="ops")
    hook = made.json()
    read = call(world, key, "GET", f"webhooks/{hook['id']}/")
    rolled = call(world, key, "POST", f"webhooks/{hook['id']}/secret/").json()["secret"]
    sent = call(world, key, "POST", f"webhooks/{hook['id']}/test/")
    dispatch_due(here)
    deliveries = call(world, key, "GET", f"webhooks/{hook['id']}/deliveries/")

    assert made.status_code == 201, made.text
    assert hook["secret"].startswith("whsec_")
    assert "secret" not in read.json() and read.json()["url"] == receiver.url
    assert rolled != hook["secret"]
    assert sent.status_code == 202 and sent.json()["type"] == "test"
    (got,) = receiver.taken
    assert got.signed_by(rolled) and not got.signed_by(hook["secret"])
    (delivery,) = deliveries.json()["results"]
    assert delivery["status"] == "delivered"
    assert [(t["number"], t["status_code"], t["ok"]) for t in delivery["tries"]] == [(1, 200, True)]
    assert hook["secret"] not in deliveries.text and rolled not in deliveries.text
    assert call(world, key, "DELETE", f"webhooks/{hook['id']}/").status_code == 204
    assert not WebhookEndpoint.objects.filter(pk=hook["id"]).exists()


def test_what_fired_is_listed_newest_first(world: World) -> None:
    org = make_org("fired", credits=Decimal(1))
    key = admin_key(org)
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=5)
    check_all()

    events = call(world, key, "GET", "events/").json()["results"]

    assert [e["type"] for e in events] == ["balance.low"]
    assert events[0]["id"].startswith("evt_")
    assert Decimal(events[0]["data"]["balance"]) == 1


def test_members_and_other_organizations_are_kept_out(world: World) -> None:
    org = make_org("guarded")
    theirs = WebhookEndpoint(organization=make_org("other"), url="https://other.example/h")
    theirs.set_secret("whsec_other")
    theirs.save()
    member = signed_in(make_user("mel", org, role=Role.MEMBER))
    admin = admin_key(org)

    assert member.get(BASE + "rules/").status_code == 403
    assert member.post(BASE + "webhooks/", {"url": "https://x.example"}).status_code == 403
    for method, path in [("GET", ""), ("DELETE", ""), ("POST", "secret/"), ("POST", "test/"),
                         ("GET", "deliveries/")]:  # fmt: skip
        answer = call(world, admin, method, f"webhooks/{theirs.pk}/{path}")
        assert answer.status_code == 404, path
    assert WebhookEndpoint.objects.filter(pk=theirs.pk).exists()
