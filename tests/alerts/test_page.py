"""The Alerts page: owners and admins set rules and webhook endpoints (a secret shown once,
kept encrypted, rolled on demand), send a test event that a real receiver gets signed, and read
each delivery's tries and answers; members cannot; nobody reaches another organization's."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import Organization, Role
from alerts.delivery import dispatch_due
from alerts.loop import here
from alerts.models import AlertKind, AlertRule, Delivery, DeliveryStatus, WebhookEndpoint
from tests.alerts.conftest import Receiver
from tests.conftest import make_org, make_user
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_SHOWN = re.compile(r'<code id="secret-value">(whsec_[^<]+)</code>')


@pytest.fixture
def acme() -> Organization:
    return make_org("acme", credits=Decimal(50))


@pytest.fixture
def owner(acme: Organization) -> User:
    return make_user("olga", acme, role=Role.OWNER)


def add_webhook(client: Client, url: str) -> tuple[WebhookEndpoint, str]:
    page = client.post("/alerts/webhooks/", {"url": url, "description": "ops"})
    assert page.status_code == 200, page.content[:300]
    match = SECRET_SHOWN.search(page.content.decode())
    assert match is not None
    return WebhookEndpoint.objects.get(url=url), match.group(1)


def test_owners_and_admins_see_the_page_members_do_not(acme: Organization, owner: User) -> None:
    admin = make_user("adam", acme, role=Role.ADMIN)
    member = make_user("mel", acme, role=Role.MEMBER)
    page = signed_in(owner).get("/alerts/")
    assert page.status_code == 200
    assert page.content.decode().count("Share of a budget spent (%)") >= 3
    assert signed_in(admin).get("/alerts/").status_code == 200
    assert signed_in(member).get("/alerts/").status_code == 403
    refused = signed_in(member).post("/alerts/webhooks/", {"url": "https://x.example"})
    assert refused.status_code == 403


def test_a_rule_is_added_checked_and_removed(acme: Organization, owner: User) -> None:
    client = signed_in(owner)
    added = client.post("/alerts/", {"kind": AlertKind.BALANCE, "threshold": "5", "email": "on"})
    twice = client.post("/alerts/", {"kind": AlertKind.BALANCE, "threshold": "5"})
    too_much = client.post("/alerts/", {"kind": AlertKind.ERROR_RATE, "threshold": "5000"})
    negative = client.post("/alerts/", {"kind": AlertKind.BALANCE, "threshold": "-1"})
    rule = AlertRule.objects.get(organization=acme, kind=AlertKind.BALANCE)
    removed = client.post(f"/alerts/rules/{rule.pk}/remove/")

    assert added.status_code == 302
    assert (rule.threshold, rule.email) == (Decimal(5), True)
    assert twice.status_code == too_much.status_code == negative.status_code == 400
    assert "This rule is set already." in twice.content.decode()
    assert removed.status_code == 302
    assert not AlertRule.objects.filter(organization=acme, kind=AlertKind.BALANCE).exists()


def test_a_webhooks_secret_is_shown_once_and_kept_encrypted(
    acme: Organization, owner: User
) -> None:
    client = signed_in(owner)
    hook, secret = add_webhook(client, "https://hooks.example/momor")
    later = client.get("/alerts/").content.decode()
    bad = client.post("/alerts/webhooks/", {"url": "ftp://hooks.example/momor"})

    assert secret.startswith("whsec_") and len(secret) > 40
    assert hook.secret() == secret
    assert secret not in hook.secret_encrypted
    assert secret not in later and "https://hooks.example/momor" in later
    assert bad.status_code == 400


def test_the_test_button_reaches_the_receiver_signed_and_the_try_is_shown(
    acme: Organization, owner: User, receiver: Receiver
) -> None:
    client = signed_in(owner)
    hook, secret = add_webhook(client, receiver.url)
    sent = client.post(f"/alerts/webhooks/{hook.pk}/test/")
    assert dispatch_due(here) == 1
    page = client.get(f"/alerts/webhooks/{hook.pk}/").content.decode()

    assert sent.status_code == 302
    (got,) = receiver.taken
    assert got.event["type"] == "test"
    assert got.event["organization"]["slug"] == "acme"
    assert got.signed_by(secret)
    assert got.headers["momor-delivery-attempt"] == "1"
    assert Delivery.objects.get(endpoint=hook).status == DeliveryStatus.DELIVERED
    assert "HTTP 200" in page and "received" in page


def test_a_rolled_secret_signs_what_is_sent_after(
    acme: Organization, owner: User, receiver: Receiver
) -> None:
    client = signed_in(owner)
    hook, old = add_webhook(client, receiver.url)
    rolled = client.post(f"/alerts/webhooks/{hook.pk}/secret/")
    match = SECRET_SHOWN.search(rolled.content.decode())
    assert match is not None
    client.post(f"/alerts/webhooks/{hook.pk}/test/")
    dispatch_due(here)

    (got,) = receiver.taken
    assert got.signed_by(match.group(1))
    assert not got.signed_by(old)


def test_a_failed_try_is_shown_and_retried_later(
    acme: Organization, owner: User, receiver: Receiver
) -> None:
    client = signed_in(owner)
    hook, _ = add_webhook(client, receiver.url)
    receiver.down = True
    client.post(f"/alerts/webhooks/{hook.pk}/test/")
    dispatch_due(here)
    delivery = Delivery.objects.get(endpoint=hook)
    page = client.get(f"/alerts/webhooks/{hook.pk}/").content.decode()

    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.attempts == 1
    assert delivery.next_attempt_at is not None
    assert "HTTP 503" in page and "down for maintenance" in page
    assert dispatch_due(here) == 0  # not due before its backoff


def test_another_organizations_webhook_is_out_of_reach(acme: Organization, owner: User) -> None:
    other = make_org("initech")
    theirs = WebhookEndpoint(organization=other, url="https://initech.example/hook")
    theirs.set_secret("whsec_theirs")
    theirs.save()
    client = signed_in(owner)
    for path in ("", "test/", "secret/", "remove/"):
        url = f"/alerts/webhooks/{theirs.pk}/{path}"
        answer = client.get(url) if not path else client.post(url)
        assert answer.status_code == 404, url
    assert WebhookEndpoint.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("169.254.169.254", "169.254.169.254 is a cloud metadata address"),
        ("10.1.2.3", "10.1.2.3 is a private, reserved or unspecified address"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1 is a loopback address"),
    ],
)
def test_an_endpoint_on_an_address_the_guard_refuses_is_never_called(
    acme: Organization, owner: User, receiver: Receiver, settings: Any, host: str, reason: str
) -> None:
    settings.MOMOR_OUTBOUND_ALLOW = []
    port = receiver.url.split(":")[2].split("/")[0]
    client = signed_in(owner)
    hook, _ = add_webhook(client, f"http://{host}:{port}/momor-hook")
    client.post(f"/alerts/webhooks/{hook.pk}/test/")
    dispatch_due(here)

    delivery = Delivery.objects.get(endpoint=hook)
    (tried,) = delivery.tries.all()
    assert receiver.arrived == []
    assert tried.status_code is None and not tried.ok
    assert tried.error == f"OutboundRefused: {reason}"
    assert delivery.status == DeliveryStatus.PENDING  # tried again: the name may move


def test_a_secret_that_no_longer_decrypts_fails_the_try_and_keeps_the_schedule(
    acme: Organization, owner: User, receiver: Receiver, settings: Any
) -> None:
    client = signed_in(owner)
    hook, _ = add_webhook(client, receiver.url)
    client.post(f"/alerts/webhooks/{hook.pk}/test/")
    settings.ENCRYPTION_KEY = "another-encryption-key"
    dispatch_due(here)

    delivery = Delivery.objects.get(endpoint=hook)
    (tried,) = delivery.tries.all()
    assert receiver.arrived == []
    assert tried.error == "UnreadableSecret: Momor could not send it"
    assert delivery.status == DeliveryStatus.PENDING and delivery.next_attempt_at is not None
