"""Joining an organization by a verified e-mail domain, as a sign-in through an identity
provider does, is audited as the person's own joining, once per membership made; so is the
account a first sign-in makes (allauth's user_signed_up)."""

from __future__ import annotations

from allauth.account.signals import user_signed_up
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.utils import timezone

from accounts.models import Organization
from accounts.sso.joining import join_by_domain
from accounts.sso.models import EmailDomain
from audit.models import ActorKind, AuditEvent
from tests.conftest import make_user


def test_a_membership_made_by_domain_is_audited_as_the_persons_join(acme: Organization) -> None:
    EmailDomain.objects.create(
        organization=acme, domain="acme.example", role="admin", verified_at=timezone.now()
    )
    dave = make_user("dave")
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.7", HTTP_USER_AGENT="Firefox")
    join_by_domain(dave, ["dave@acme.example"], request)
    join_by_domain(dave, ["dave@acme.example"], request)
    rows = [
        (e.actor_kind, e.actor, e.action, e.organization_id, e.changes["role"], e.address)
        for e in AuditEvent.objects.all()
    ]
    assert rows == [(ActorKind.USER, "dave", "join", acme.pk, [None, "admin"], "192.0.2.7")]


def test_an_account_made_by_a_first_sign_in_is_audited_as_its_owners(db: None) -> None:
    erin = User.objects.create_user(username="erin@acme.example", email="erin@acme.example")
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.8")
    user_signed_up.send(sender=User, request=request, user=erin)
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.object_type, event.address) == (
        "erin@acme.example",
        "sign_up",
        "auth.user",
        "192.0.2.8",
    )
    assert event.changes["password"] == "changed"
    assert event.changes["username"] == [None, "erin@acme.example"]
