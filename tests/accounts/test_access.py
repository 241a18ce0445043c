"""Access: nothing of one organization is seen or changed from another (pages, forms, CSV),
each role does exactly what it should, and every form refuses a post without its CSRF token.
The live feed's own checks are in tests/billing/test_consumers.py."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import ApiKey, Membership, Organization, Role, SavedKey
from accounts.permissions import SESSION_ORG
from billing.ledger.posting import ledger_post
from billing.models import EntryKind
from tests.conftest import make_key, make_user
from tests.ui_helpers import make_generation, signed_in, streamed

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_things(acme: Organization, alice: User) -> dict[str, Any]:
    """Something of every kind in acme, each with a marker no other organization has."""
    _, key = make_key(acme, name="acme-prod-key", created_by=alice)
    saved = SavedKey(organization=acme, provider="azure", label="acme-azure-label")
    saved.set_secret("acme-azure-secret-9999")
    saved.save()
    generation = make_generation(acme, model="acme/private-model", key=key)
    ledger_post(organization_id=acme.pk, kind=EntryKind.TOPUP, amount=Decimal(7), note="acme-note")
    return {"key": key, "saved": saved, "generation": generation}


# One organization against another ------------------------------------------------------

PAGES = ["/", "/keys/", "/provider-keys/", "/policy/", "/members/", "/billing/", "/organization/",
         "/usage/", "/generations/", "/generations/export.csv", "/playground/"]  # fmt: skip
MARKERS = ["acme-prod-key", "acme-azure-label", "acme/private-model", "acme-note", "alice", "Acme"]


@pytest.mark.parametrize("path", PAGES)
def test_no_page_shows_another_organizations_things(
    mallory: User, acme_things: dict[str, Any], path: str
) -> None:
    response = signed_in(mallory).get(path)
    assert response.status_code == 200
    page = streamed(response) if response.streaming else response.content.decode()
    assert [marker for marker in MARKERS if marker in page] == []


def test_a_forged_session_organization_is_ignored(
    mallory: User, acme: Organization, globex: Organization, acme_things: dict[str, Any]
) -> None:
    client = signed_in(mallory)
    session = client.session
    session[SESSION_ORG] = acme.pk
    session.save()
    assert client.get("/").context["current"].organization == globex
    assert "acme-prod-key" not in client.get("/keys/").content.decode()


def test_switching_to_an_organization_one_is_not_in_does_nothing(
    mallory: User, acme: Organization, globex: Organization
) -> None:
    client = signed_in(mallory)
    client.post("/organizations/switch/", {"organization": acme.pk})
    assert SESSION_ORG not in client.session
    assert client.get("/").context["current"].organization == globex


def test_another_organizations_generation_is_not_found(
    mallory: User, acme_things: dict[str, Any]
) -> None:
    request_id = acme_things["generation"].request_id
    assert signed_in(mallory).get(f"/generations/{request_id}/").status_code == 404


def test_another_organizations_key_cannot_be_changed(
    mallory: User, acme_things: dict[str, Any]
) -> None:
    key: ApiKey = acme_things["key"]
    client = signed_in(mallory)
    assert client.post(f"/keys/{key.pk}/revoke/").status_code == 404
    assert client.post(f"/keys/{key.pk}/limits/", {"rate_limit": "1"}).status_code == 404
    key.refresh_from_db()
    assert (key.revoked_at, key.rate_limit) == (None, None)


def test_another_organizations_saved_key_cannot_be_removed(
    mallory: User, acme_things: dict[str, Any]
) -> None:
    saved = acme_things["saved"]
    assert signed_in(mallory).post(f"/provider-keys/{saved.pk}/remove/").status_code == 404
    assert SavedKey.objects.filter(pk=saved.pk).exists()


def test_policy_and_name_change_only_ones_own_organization(
    mallory: User, acme: Organization, globex: Organization
) -> None:
    client = signed_in(mallory)
    client.post("/policy/", {"zdr_hold": "on", "max_model_age": "P1Y"})
    client.post("/organization/", {"name": "Taken"})
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert (acme.zdr_hold, acme.max_model_age, acme.name) == (False, None, "Acme")
    assert (globex.zdr_hold, globex.name) == (True, "Taken")


def test_another_organizations_members_cannot_be_changed(
    mallory: User, alice: User, bob: User
) -> None:
    membership = Membership.objects.get(user=bob)
    client = signed_in(mallory)
    assert client.post(f"/members/{membership.pk}/role/", {"role": "owner"}).status_code == 404
    assert client.post(f"/members/{membership.pk}/remove/").status_code == 404
    membership.refresh_from_db()
    assert membership.role == Role.MEMBER


# Roles ----------------------------------------------------------------------------------

ADMIN_PAGES = ["/provider-keys/", "/policy/", "/members/"]
OWNER_PAGES = ["/billing/", "/organization/"]
EVERYONE = ["/", "/keys/", "/usage/", "/generations/", "/generations/export.csv", "/playground/"]


@pytest.fixture
def carol(acme: Organization) -> User:
    return make_user("carol", acme, Role.ADMIN)


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_the_owner_opens_every_page(alice: User, path: str) -> None:
    assert signed_in(alice).get(path).status_code == 200


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_an_admin_opens_all_but_the_owners_pages(carol: User, path: str) -> None:
    assert signed_in(carol).get(path).status_code == (403 if path in OWNER_PAGES else 200)


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_a_member_opens_only_the_members_pages(bob: User, path: str) -> None:
    assert signed_in(bob).get(path).status_code == (200 if path in EVERYONE else 403)


def test_a_member_cannot_manage_saved_keys_policy_or_members(
    bob: User, alice: User, acme_things: dict[str, Any]
) -> None:
    client = signed_in(bob)
    own = Membership.objects.get(user=bob)
    posts = {
        "/provider-keys/": {"provider": "azure", "secret": "bobs-own-secret-1234"},
        f"/provider-keys/{acme_things['saved'].pk}/remove/": {},
        "/policy/": {"zdr_hold": "on"},
        "/members/": {"email": "eve@example.com", "role": "owner"},
        f"/members/{own.pk}/role/": {"role": "owner"},
        "/billing/": {},
        "/organization/": {"name": "Bob's"},
    }
    assert {path: client.post(path, data).status_code for path, data in posts.items()} == {
        path: 403 for path in posts
    }
    acme = Organization.objects.get(slug="acme")
    assert (acme.zdr_hold, acme.name) == (False, "Acme")
    assert SavedKey.objects.get().secret == "acme-azure-secret-9999"
    assert Membership.objects.get(user=bob).role == Role.MEMBER
    assert not Membership.objects.filter(user__email="eve@example.com").exists()


def test_a_member_sees_and_manages_only_their_own_keys(
    bob: User, alice: User, acme: Organization, acme_things: dict[str, Any]
) -> None:
    client = signed_in(bob)
    client.post("/keys/", {"name": "bobs-key"})
    page = client.get("/keys/").content.decode()
    assert "bobs-key" in page
    assert "acme-prod-key" not in page
    alices: ApiKey = acme_things["key"]
    assert client.post(f"/keys/{alices.pk}/revoke/").status_code == 404
    bobs = ApiKey.objects.get(name="bobs-key")
    assert client.post(f"/keys/{bobs.pk}/revoke/").status_code == 302
    bobs.refresh_from_db()
    alices.refresh_from_db()
    assert (bobs.revoked_at is not None, alices.revoked_at) == (True, None)


def test_an_admin_sees_every_key(carol: User, acme_things: dict[str, Any]) -> None:
    assert "acme-prod-key" in signed_in(carol).get("/keys/").content.decode()


def test_an_admin_cannot_make_touch_or_remove_owners(carol: User, alice: User, bob: User) -> None:
    client = signed_in(carol)
    owner = Membership.objects.get(user=alice)
    member = Membership.objects.get(user=bob)
    assert (
        client.post("/members/", {"email": "eve@example.com", "role": "owner"}).status_code == 403
    )
    assert client.post(f"/members/{member.pk}/role/", {"role": "owner"}).status_code == 403
    assert client.post(f"/members/{owner.pk}/role/", {"role": "member"}).status_code == 403
    assert client.post(f"/members/{owner.pk}/remove/").status_code == 403
    assert Membership.objects.get(user=alice).role == Role.OWNER
    assert client.post(f"/members/{member.pk}/role/", {"role": "admin"}).status_code == 302
    assert Membership.objects.get(user=bob).role == Role.ADMIN


# CSRF -----------------------------------------------------------------------------------


def form_posts(
    acme_things: dict[str, Any], bob: User, acme: Organization
) -> dict[str, dict[str, str]]:
    key, saved = acme_things["key"], acme_things["saved"]
    member = Membership.objects.get(user=bob)
    return {
        "/keys/": {"name": "csrf"},
        f"/keys/{key.pk}/limits/": {"rate_limit": "5"},
        f"/keys/{key.pk}/revoke/": {},
        "/provider-keys/": {"provider": "azure", "secret": "another-secret-0000"},
        f"/provider-keys/{saved.pk}/remove/": {},
        "/policy/": {"zdr_hold": "on"},
        "/members/": {"email": "eve@example.com", "role": "member"},
        f"/members/{member.pk}/role/": {"role": "admin"},
        f"/members/{member.pk}/remove/": {},
        "/organization/": {"name": "Forged"},
        "/organizations/switch/": {"organization": str(acme.pk)},
        "/accounts/logout/": {},
        "/accounts/password_change/": {"old_password": "alice-pass-123!"},
        "/accounts/password_reset/": {"email": "alice@example.com"},
    }


def test_every_form_refuses_a_post_without_its_csrf_token(
    alice: User, bob: User, acme: Organization, acme_things: dict[str, Any]
) -> None:
    client = signed_in(alice, csrf=True)
    posts = form_posts(acme_things, bob, acme)
    statuses = {path: client.post(path, data).status_code for path, data in posts.items()}
    assert statuses == {path: 403 for path in posts}
    login = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "alice", "password": "alice-pass-123!"}
    )
    assert login.status_code == 403
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.name) == (False, "Acme")
    assert not ApiKey.objects.filter(name="csrf").exists()
    assert ApiKey.objects.get(name="acme-prod-key").revoked_at is None
    assert Membership.objects.filter(user=bob).exists()


def test_a_form_with_its_csrf_token_is_taken(alice: User, acme: Organization) -> None:
    client = signed_in(alice, csrf=True)
    client.get("/keys/")
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post("/keys/", {"name": "with-token", "csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert ApiKey.objects.filter(name="with-token").exists()
