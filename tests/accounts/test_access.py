"""Access: nothing of one organization is seen or changed from another (pages, forms, CSV,
completions on a session, the live feed), each role does exactly what it should, and every
form refuses a post without its CSRF token."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from accounts.models import ApiKey, Membership, Organization, Role, SavedKey
from accounts.permissions import SESSION_ORG
from billing.ledger import ledger_post
from billing.live import group_name, publish_generation
from billing.models import EntryKind
from tests.accounts.ui_helpers import make_generation
from tests.conftest import make_key, make_user

pytestmark = pytest.mark.django_db


def signed_in(user: Any, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


@pytest.fixture
def acme_things(acme: Organization, alice: Any) -> dict[str, Any]:
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
def test_no_page_shows_another_organizations_things(mallory, acme_things, path) -> None:  # type: ignore[no-untyped-def]
    response = signed_in(mallory).get(path)
    assert response.status_code == 200
    page = response.content.decode()
    assert [marker for marker in MARKERS if marker in page] == []


def test_a_forged_session_organization_is_ignored(mallory, acme, globex, acme_things) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(mallory)
    session = client.session
    session[SESSION_ORG] = acme.pk
    session.save()
    assert client.get("/").context["current"].organization == globex
    assert "acme-prod-key" not in client.get("/keys/").content.decode()


def test_switching_to_an_organization_one_is_not_in_does_nothing(mallory, acme, globex) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(mallory)
    client.post("/organizations/switch/", {"organization": acme.pk})
    assert SESSION_ORG not in client.session
    assert client.get("/").context["current"].organization == globex


def test_another_organizations_generation_is_not_found(mallory, acme_things) -> None:  # type: ignore[no-untyped-def]
    request_id = acme_things["generation"].request_id
    assert signed_in(mallory).get(f"/generations/{request_id}/").status_code == 404


def test_another_organizations_key_cannot_be_changed(mallory, acme_things) -> None:  # type: ignore[no-untyped-def]
    key: ApiKey = acme_things["key"]
    client = signed_in(mallory)
    assert client.post(f"/keys/{key.pk}/revoke/").status_code == 404
    assert client.post(f"/keys/{key.pk}/limits/", {"rate_limit": "1"}).status_code == 404
    key.refresh_from_db()
    assert (key.revoked_at, key.rate_limit) == (None, None)


def test_another_organizations_saved_key_cannot_be_removed(mallory, acme_things) -> None:  # type: ignore[no-untyped-def]
    saved = acme_things["saved"]
    assert signed_in(mallory).post(f"/provider-keys/{saved.pk}/remove/").status_code == 404
    assert SavedKey.objects.filter(pk=saved.pk).exists()


def test_policy_and_name_change_only_ones_own_organization(mallory, acme, globex) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(mallory)
    client.post("/policy/", {"zdr_hold": "on", "max_model_age": "P1Y"})
    client.post("/organization/", {"name": "Taken"})
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert (acme.zdr_hold, acme.max_model_age, acme.name) == (False, None, "Acme")
    assert (globex.zdr_hold, globex.name) == (True, "Taken")


def test_another_organizations_members_cannot_be_changed(mallory, alice, bob) -> None:  # type: ignore[no-untyped-def]
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
def carol(acme: Organization) -> Any:
    return make_user("carol", acme, Role.ADMIN)


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_the_owner_opens_every_page(alice, path) -> None:  # type: ignore[no-untyped-def]
    assert signed_in(alice).get(path).status_code == 200


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_an_admin_opens_all_but_the_owners_pages(carol, path) -> None:  # type: ignore[no-untyped-def]
    assert signed_in(carol).get(path).status_code == (403 if path in OWNER_PAGES else 200)


@pytest.mark.parametrize("path", EVERYONE + ADMIN_PAGES + OWNER_PAGES)
def test_a_member_opens_only_the_members_pages(bob, path) -> None:  # type: ignore[no-untyped-def]
    assert signed_in(bob).get(path).status_code == (200 if path in EVERYONE else 403)


def test_a_member_cannot_manage_saved_keys_policy_or_members(bob, alice, acme_things) -> None:  # type: ignore[no-untyped-def]
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


def test_a_member_sees_and_manages_only_their_own_keys(bob, alice, acme, acme_things) -> None:  # type: ignore[no-untyped-def]
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


def test_an_admin_sees_every_key(carol, acme_things) -> None:  # type: ignore[no-untyped-def]
    assert "acme-prod-key" in signed_in(carol).get("/keys/").content.decode()


def test_an_admin_cannot_make_touch_or_remove_owners(carol, alice, bob) -> None:  # type: ignore[no-untyped-def]
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
    acme_things: dict[str, Any], bob: Any, acme: Organization
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


def test_every_form_refuses_a_post_without_its_csrf_token(alice, bob, acme, acme_things) -> None:  # type: ignore[no-untyped-def]
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


def test_a_form_with_its_csrf_token_is_taken(alice, acme) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(alice, csrf=True)
    client.get("/keys/")
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post("/keys/", {"name": "with-token", "csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert ApiKey.objects.filter(name="with-token").exists()


# The live feed ---------------------------------------------------------------------------


def session_cookie(user: Any, org: Organization | None = None) -> str:
    client = signed_in(user)
    if org is not None:
        session = client.session
        session[SESSION_ORG] = org.pk
        session.save()
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def feed(cookie: str | None, origin: bytes = b"http://localhost") -> WebsocketCommunicator:
    from momor.asgi import application

    headers = [(b"origin", origin), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, "/ws/generations/", headers=headers)


@pytest.fixture
async def own_connections() -> Any:
    """Close the database connections that sync_to_async's thread opened for the test."""
    yield
    await sync_to_async(connections.close_all)()


async def publish(org: Organization, request_id: str) -> None:
    message = {"type": "generation.recorded", "generation": {"request_id": request_id}}
    await get_channel_layer().group_send(group_name(org.pk), message)


@pytest.mark.django_db(transaction=True)
async def test_the_feed_carries_only_ones_own_organizations_generations(
    alice: Any, mallory: Any, acme: Organization, globex: Organization, own_connections: None
) -> None:
    alices = await feed(await sync_to_async(session_cookie)(alice))
    # mallory's session names acme: the feed still joins only globex.
    mallorys = await feed(await sync_to_async(session_cookie)(mallory, acme))
    assert (await alices.connect())[0] and (await mallorys.connect())[0]
    await publish(acme, "acme-1")
    assert await alices.receive_json_from(timeout=2) == {"generation": {"request_id": "acme-1"}}
    assert await mallorys.receive_nothing(timeout=0.3)
    await publish(globex, "globex-1")
    assert await mallorys.receive_json_from(timeout=2) == {"generation": {"request_id": "globex-1"}}
    assert await alices.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await mallorys.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_feed_refuses_visitors_and_foreign_pages(
    alice: Any, own_connections: None
) -> None:
    anonymous = await feed(None)
    assert (await anonymous.connect())[0] is False
    foreign = await feed(await sync_to_async(session_cookie)(alice), origin=b"http://evil.example")
    assert (await foreign.connect())[0] is False


@pytest.mark.django_db(transaction=True)
async def test_the_in_memory_feed_carries_records_written_in_another_thread(
    alice: Any, acme: Organization, settings: Any, own_connections: None
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    listener = await feed(await sync_to_async(session_cookie)(alice))
    assert (await listener.connect())[0]
    generation = await sync_to_async(make_generation)(acme, model="openai/gpt-5")
    # The recorder is a plain thread, as in billing.recording.
    await asyncio.to_thread(publish_generation, generation)
    received = await listener.receive_json_from(timeout=2)
    assert received["generation"]["request_id"] == generation.request_id
    await listener.disconnect()
