"""Attacker-style: invitations. The link goes by mail to the invited address and never to
the inviter; a new person sets their password through it, someone with an account signs in
and accepts as that account; a link works once, expires, can be revoked, and dies with its
sender's power to send it. No step ever hands an existing account to anyone."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from accounts.models import Invitation, Membership, Organization, Role
from tests.conftest import make_org
from tests.security.roles_helpers import Browser, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "a-long-new-pass-42"
Browsers = Callable[..., Browser]


@pytest.fixture
def browsers(gateway: str) -> Iterator[Browsers]:
    """Make browsers against the running Momor, signed in as someone or not."""
    made: list[Browser] = []

    def make(username: str | None = None) -> Browser:
        browser = Browser(gateway)
        made.append(browser)
        if username is not None:
            assert browser.sign_in(username).status_code == 302
        return browser

    yield make
    for browser in made:
        browser.close()


@pytest.fixture
def acme(gateway: str) -> Organization:
    org = make_org("acme", credits=Decimal(10))
    person("alice", org, Role.OWNER)
    return org


def invite(browser: Browser, email: str, role: str = Role.MEMBER) -> Any:
    """Invite through the members page; return the page shown after it."""
    sent = browser.post("/members/", {"email": email, "role": role})
    assert sent.status_code == 302, sent.text
    return browser.get("/members/")


def link_in_mail(to: str) -> str:
    (message,) = [m for m in mail.outbox if m.to == [to]]
    found = re.search(r"http://127\.0\.0\.1:\d+(/invitations/[^/\s]+/)", str(message.body))
    assert found, message.body
    return found.group(1)


def set_password(browser: Browser, link: str, password: str = NEW_PASSWORD) -> Any:
    return browser.post(link, {"new_password1": password, "new_password2": password})


def test_the_link_is_mailed_to_the_address_and_never_shown_to_the_inviter(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    alice = browsers("alice")
    page = invite(alice, "Carol@Example.com", Role.ADMIN)
    link = link_in_mail("carol@example.com")
    assert link not in page.text
    token = link.split("/")[2]
    assert token not in page.text
    assert "carol@example.com" in page.text  # listed as pending
    assert not Membership.objects.filter(user__email="carol@example.com").exists()
    assert Invitation.objects.get().token_hash not in page.text


def test_a_new_person_sets_their_password_and_joins(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    invite(browsers("alice"), "carol@example.com", Role.ADMIN)
    link = link_in_mail("carol@example.com")
    carol = browsers()
    assert carol.get(link, follow_redirects=True).status_code == 200
    joined = set_password(carol, link)
    assert (joined.status_code, joined.headers["location"]) == (302, "/")
    assert "Acme" in carol.get("/").text
    assert Membership.objects.get(user__email="carol@example.com").role == Role.ADMIN
    assert browsers().sign_in("carol@example.com", NEW_PASSWORD).status_code == 302

    assert browsers().get(link).status_code == 410  # single use
    assert set_password(browsers(), link, "another-pass-77").status_code == 410
    assert 'id="no-invitations"' in browsers("alice").get("/members/").text


def test_an_inviter_cannot_take_the_account_nor_join_it_elsewhere(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    """The old attack: mallory invites victor, takes his account through the link she was
    shown, and when acme later invites victor, acme joins mallory's account."""
    globex = make_org("globex")
    person("mallory", globex, Role.OWNER)
    mallory = browsers("mallory")
    page = invite(mallory, "victor@example.com")
    assert "/invitations/" not in page.text.replace("/members/invitations/", "")
    assert (
        mallory.post("/accounts/password_reset/", {"email": "victor@example.com"}).status_code
        == 302
    )
    assert [m.to for m in mail.outbox] == [["victor@example.com"]]  # no reset: no account yet

    victor = browsers()
    assert set_password(victor, link_in_mail("victor@example.com")).status_code == 302
    mail.outbox.clear()
    invite(browsers("alice"), "victor@example.com")
    victors = Membership.objects.filter(user__email="victor@example.com")
    assert [m.organization.slug for m in victors] == ["globex"]  # not until victor accepts
    assert mallory.get(link_in_mail("victor@example.com"), follow_redirects=True).status_code == 403


def test_someone_with_an_account_signs_in_and_accepts(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    bob = person("bob", make_org("initech"))
    invite(browsers("alice"), "bob@example.com")
    link = link_in_mail("bob@example.com")

    anonymous = browsers()
    opened = anonymous.get(link)
    assert (opened.status_code, opened.headers["location"]) == (302, "/invitations/accept/")
    to_sign_in = anonymous.get(opened.headers["location"])
    assert to_sign_in.status_code == 302
    assert to_sign_in.headers["location"].startswith("/accounts/login/?next=/invitations/")
    assert set_password(anonymous, link).status_code == 302  # to sign in, nothing set
    assert not Membership.objects.filter(user=bob, organization=acme).exists()

    visitor = browsers("bob")
    assert "Accept and join" in visitor.get(link, follow_redirects=True).text
    assert visitor.post(link).headers["location"] == "/"
    assert Membership.objects.get(user=bob, organization=acme).role == Role.MEMBER
    assert "Acme" in visitor.get("/").text  # the session switched to it
    bob.refresh_from_db()
    assert bob.check_password("bob-pass-123!") and not bob.check_password(NEW_PASSWORD)


def test_another_account_cannot_accept(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    bob = person("bob", make_org("initech"))
    person("mallory", make_org("globex"), Role.OWNER)
    invite(browsers("alice"), "bob@example.com")
    link = link_in_mail("bob@example.com")
    mallory = browsers("mallory")
    assert mallory.get(link, follow_redirects=True).status_code == 403
    assert mallory.post(link).status_code == 403
    assert set_password(mallory, link).status_code == 403
    assert not Membership.objects.filter(organization=acme).exclude(user__username="alice").exists()
    bob.refresh_from_db()
    assert bob.check_password("bob-pass-123!")
    assert browsers("bob").post(link).status_code == 302  # still good for bob


def test_an_expired_revoked_replaced_or_forged_link_is_refused(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    alice = browsers("alice")
    invite(alice, "old@example.com")
    expired = link_in_mail("old@example.com")
    Invitation.objects.filter(email="old@example.com").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    invite(alice, "gone@example.com")
    revoked = link_in_mail("gone@example.com")
    pending = Invitation.objects.get(email="gone@example.com")
    assert alice.post(f"/members/invitations/{pending.pk}/revoke/").status_code == 302
    invite(alice, "twice@example.com")
    first = link_in_mail("twice@example.com")
    mail.outbox.clear()
    invite(alice, "twice@example.com")
    second = link_in_mail("twice@example.com")
    forged = second[:-3] + ("A" if second[-3] != "A" else "B") + "/"

    for link in [expired, revoked, first, forged, "/invitations/not-a-token/"]:
        answer = set_password(browsers(), link)
        assert answer.status_code == 410, link
    assert set_password(browsers(), second).status_code == 302
    assert sorted(Membership.objects.values_list("user__username", flat=True)) == [
        "alice",
        "twice@example.com",
    ]
    members_page = alice.get("/members/").text
    assert "gone@example.com" not in members_page and "old@example.com" not in members_page


def test_the_ttl_setting_bounds_every_link(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any], settings: Any
) -> None:
    invite(browsers("alice"), "late@example.com")
    link = link_in_mail("late@example.com")
    settings.MOMOR_INVITATION_TTL_SECONDS = 1
    time.sleep(2.1)
    assert browsers().get(link).status_code == 410


def test_an_invitation_dies_with_its_senders_power_to_send_it(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    carol = person("carol", acme, Role.ADMIN)
    invite(browsers("carol"), "dave@example.com", Role.ADMIN)
    link = link_in_mail("dave@example.com")
    Membership.objects.filter(user=carol).update(role=Role.MEMBER)  # behind the services' back
    assert set_password(browsers(), link).status_code == 410
    Membership.objects.filter(user=carol).update(role=Role.ADMIN)
    carols = Membership.objects.get(user=carol)
    assert browsers("alice").post(f"/members/{carols.pk}/remove/").status_code == 302
    assert set_password(browsers(), link).status_code == 410
    assert not Membership.objects.filter(user__email="dave@example.com").exists()


def test_only_the_organizations_admins_see_and_revoke_its_invitations(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    person("bob", acme)
    person("carol", acme, Role.ADMIN)
    person("mallory", make_org("globex"), Role.OWNER)
    alice = browsers("alice")
    invite(alice, "next-owner@example.com", Role.OWNER)
    pending = Invitation.objects.get()
    revoke = f"/members/invitations/{pending.pk}/revoke/"

    assert browsers("mallory").post(revoke).status_code == 404
    assert "next-owner@example.com" not in browsers("mallory").get("/members/").text
    assert browsers("bob").post(revoke).status_code == 403
    assert (
        browsers("bob").post("/members/", {"email": "x@example.com", "role": "member"}).status_code
        == 403
    )
    assert browsers("carol").post(revoke).status_code == 403  # an owner's invitation
    assert (
        browsers("carol").post("/members/", {"email": "y@example.com", "role": "owner"}).status_code
        == 403
    )
    pending.refresh_from_db()
    assert pending.is_pending()
    assert [m.to for m in mail.outbox] == [["next-owner@example.com"]]


def test_inviting_a_member_again_is_refused(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    answer = browsers("alice").post("/members/", {"email": "ALICE@example.com", "role": "member"})
    assert answer.status_code == 400
    assert "already a member" in answer.text
    assert mail.outbox == []


def test_the_invitation_forms_need_their_csrf_token(
    acme: Organization, browsers: Browsers, mailoutbox: list[Any]
) -> None:
    invite(browsers("alice"), "carol@example.com")
    link = link_in_mail("carol@example.com")
    forged = browsers().http.post(
        link, data={"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert forged.status_code == 403
    assert not Membership.objects.filter(user__email="carol@example.com").exists()
    alice = browsers("alice")
    pending = Invitation.objects.get()
    revoke = alice.http.post(f"/members/invitations/{pending.pk}/revoke/")
    invite_again = alice.http.post("/members/", data={"email": "z@example.com", "role": "member"})
    assert (revoke.status_code, invite_again.status_code) == (403, 403)
    pending.refresh_from_db()
    assert pending.is_pending() and len(mail.outbox) == 1
