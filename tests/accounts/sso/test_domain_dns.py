"""An owner verifies a claimed domain themselves: the page names a TXT record, Check DNS asks a
real DNS server (on loopback, MOMOR_DNS_NAMESERVERS) and verifies the domain once the record is
there; a missing, wrong or other organization's record verifies nothing, and a domain another
organization verified first stays theirs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import Organization, Role
from accounts.sso.models import EmailDomain
from audit.models import AuditEvent
from tests.conftest import make_org, make_user
from tests.dns_server import DnsServer, dns_server
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def dns(settings: Any) -> Iterator[DnsServer]:
    with dns_server() as server:
        settings.MOMOR_DNS_NAMESERVERS = [server.address]
        yield server


@pytest.fixture
def owner() -> User:
    return make_user("olga", make_org("acme"), role=Role.OWNER)


def claim(client: Client, domain: str = "acme.example") -> EmailDomain:
    assert client.post("/sso/", {"domain": domain, "role": "admin"}).status_code == 302
    return EmailDomain.objects.get(domain=domain, organization__slug="acme")


def check(client: Client, claimed: EmailDomain) -> str:
    answer = client.post(f"/sso/domains/{claimed.pk}/check/", follow=True)
    assert answer.status_code == 200
    return answer.content.decode()


def test_the_page_names_the_record_and_check_dns_verifies_it(owner: User, dns: DnsServer) -> None:
    client = signed_in(owner)
    claimed = claim(client)
    page = client.get("/sso/").content.decode()
    before = check(client, claimed)
    dns.records["_momor-challenge.acme.example"] = ["v=spf1 -all", claimed.challenge_value]
    after = check(client, claimed)
    claimed.refresh_from_db()

    assert "_momor-challenge.acme.example" in page and claimed.challenge_value in page
    assert claimed.challenge_value.startswith("momor-domain-verification=")
    assert "No TXT record" in before
    assert "acme.example verified" in after
    assert claimed.verified_at is not None
    assert dns.asked.count("_momor-challenge.acme.example") == 2
    (row,) = AuditEvent.objects.filter(action="verify")
    assert row.actor == "olga" and row.object_type == "sso.emaildomain"


def test_a_wrong_or_foreign_record_verifies_nothing(owner: User, dns: DnsServer) -> None:
    client = signed_in(owner)
    claimed = claim(client)
    theirs = EmailDomain.objects.create(organization=make_org("globex"), domain="acme.example")
    dns.records["_momor-challenge.acme.example"] = [theirs.challenge_value, "momor-domain-x"]
    dns.records["acme.example"] = [claimed.challenge_value]  # at the bare name: not the place

    page = check(client, claimed)
    claimed.refresh_from_db()

    assert "No TXT record" in page
    assert claimed.verified_at is None


def test_a_domain_another_organization_verified_first_stays_theirs(
    owner: User, dns: DnsServer
) -> None:
    client = signed_in(owner)
    claimed = claim(client)
    EmailDomain.objects.create(organization=make_org("globex"), domain="acme.example").verify()
    dns.records["_momor-challenge.acme.example"] = [claimed.challenge_value]

    page = check(client, claimed)
    claimed.refresh_from_db()

    assert "verified for another organization" in page
    assert claimed.verified_at is None
    assert not AuditEvent.objects.filter(action="verify").exists()


def test_a_dns_server_that_does_not_answer_verifies_nothing(owner: User, settings: Any) -> None:
    settings.MOMOR_DNS_NAMESERVERS = ["127.0.0.1:9"]  # the discard port: nothing answers
    client = signed_in(owner)
    claimed = claim(client)

    assert "No TXT record" in check(client, claimed)


def test_only_owners_check_and_only_their_own_domains(owner: User, dns: DnsServer) -> None:
    acme = Organization.objects.get(slug="acme")
    admin = signed_in(make_user("adam", acme, role=Role.ADMIN))
    claimed = claim(signed_in(owner))
    theirs = EmailDomain.objects.create(organization=make_org("globex"), domain="globex.example")

    assert admin.post(f"/sso/domains/{claimed.pk}/check/").status_code == 403
    assert signed_in(owner).post(f"/sso/domains/{theirs.pk}/check/").status_code == 404
