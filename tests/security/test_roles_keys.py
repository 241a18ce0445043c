"""Attacker-style: a removed member, a demoted admin and a deleted account try to keep using
the keys they made. A key works only while its creator stands behind it: an inference key
while they are a member, a management key while they are an admin or owner. A key made by an
operator's command has no creator and belongs to the organization."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from accounts.models import ApiKey, KeyKind, Membership, Role
from tests.conftest import make_key
from tests.gateway.conftest import World
from tests.security.roles_helpers import Browser, eventually, manage, membership, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}


def calls(on: World, key: str) -> int:
    return on.post(HELLO, key=key).status_code


def records(on: World, key: str) -> int:
    """What `GET /v1/generation` answers this key (404: allowed, nothing recorded)."""
    headers = {"authorization": f"Bearer {key}"}
    response = httpx.get(f"{on.url}/v1/generation", params={"id": "x"}, headers=headers)
    return response.status_code


@pytest.fixture
def owner_browser(world: World) -> Any:
    person("alice", world.org, Role.OWNER)
    browser = Browser(world.url)
    assert browser.sign_in("alice").status_code == 302
    yield browser
    browser.close()


def remove(browser: Browser, who: Membership) -> None:
    assert browser.post(f"/members/{who.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(pk=who.pk).exists()


def test_a_removed_members_key_stops_working_within_the_refresh(
    world: World,
    owner_browser: Browser,
) -> None:
    bob = person("bob", world.org)
    key, row = make_key(world.org, name="bobs", created_by=bob)
    assert calls(world, key) == 200  # the gateway now holds the key in memory

    remove(owner_browser, membership(bob, world.org))

    eventually(lambda: calls(world, key) == 401, within=5, what="bob's key still works")
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_a_membership_deleted_behind_the_services_back_stops_the_key_too(
    world: World,
) -> None:
    bob = person("bob", world.org)
    key, row = make_key(world.org, name="bobs", created_by=bob)
    assert calls(world, key) == 200

    Membership.objects.filter(user=bob).delete()  # as the operators' admin does it

    eventually(lambda: calls(world, key) == 401, within=5, what="bob's key still works")
    row.refresh_from_db()
    assert row.revoked_at is None  # refused because its creator left, not revoked


def test_a_demoted_admins_management_key_is_refused(
    world: World,
    owner_browser: Browser,
) -> None:
    carol = person("carol", world.org, Role.ADMIN)
    management, _ = make_key(world.org, kind=KeyKind.MANAGEMENT, created_by=carol)
    inference, _ = make_key(world.org, created_by=carol)
    assert manage(world.url, management, "GET", "keys/").status_code == 200
    assert records(world, management) == 404

    carols = membership(carol, world.org)
    assert owner_browser.post(f"/members/{carols.pk}/role/", {"role": "member"}).status_code == 302

    assert manage(world.url, management, "GET", "keys/").status_code == 401
    assert manage(world.url, management, "POST", "keys/", json={"name": "x"}).status_code == 401
    eventually(lambda: records(world, management) == 401, within=5, what="records still read")
    assert calls(world, inference) == 200  # a member keeps their inference keys


def test_a_demotion_made_in_the_admin_disables_the_management_key(
    world: World,
) -> None:
    carol = person("carol", world.org, Role.ADMIN)
    management, _ = make_key(world.org, kind=KeyKind.MANAGEMENT, created_by=carol)
    assert records(world, management) == 404

    Membership.objects.filter(user=carol).update(role=Role.MEMBER)

    assert manage(world.url, management, "GET", "credits/").status_code == 401
    eventually(lambda: records(world, management) == 401, within=5, what="records still read")
    Membership.objects.filter(user=carol).update(role=Role.OWNER)
    assert manage(world.url, management, "GET", "credits/").status_code == 200


def test_keys_a_management_key_makes_are_its_creators(
    world: World,
    owner_browser: Browser,
) -> None:
    carol = person("carol", world.org, Role.ADMIN)
    management, _ = make_key(world.org, kind=KeyKind.MANAGEMENT, created_by=carol)
    made = manage(world.url, management, "POST", "keys/", json={"name": "made-by-api"})
    assert made.status_code == 201
    key = made.json()["key"]
    assert ApiKey.objects.get(name="made-by-api").created_by == carol
    assert calls(world, key) == 200

    remove(owner_browser, membership(carol, world.org))

    eventually(lambda: calls(world, key) == 401, within=5, what="the key carol made lives on")


def test_deleting_an_account_revokes_its_keys_rather_than_orphaning_them(
    world: World,
) -> None:
    bob = person("bob", world.org)
    key, row = make_key(world.org, name="bobs", created_by=bob)
    make_key(world.org, name="old", created_by=bob)
    old = ApiKey.objects.get(name="old")
    old.revoke()
    assert calls(world, key) == 200

    bob.delete()

    row.refresh_from_db()
    assert (row.created_by, row.revoked_at is not None) == (None, True)
    assert ApiKey.objects.get(name="old").revoked_at == old.revoked_at  # kept as it was
    eventually(lambda: calls(world, key) == 401, within=5, what="the orphaned key works")


def test_a_removed_member_invited_again_does_not_get_their_keys_back(
    world: World,
    owner_browser: Browser,
) -> None:
    bob = person("bob", world.org)
    key, _ = make_key(world.org, name="bobs", created_by=bob)
    remove(owner_browser, membership(bob, world.org))
    Membership.objects.create(user=bob, organization=world.org, role=Role.MEMBER)
    eventually(lambda: calls(world, key) == 401, within=5, what="bob's old key came back")


def test_an_operators_key_belongs_to_the_organization(
    world: World,
    owner_browser: Browser,
) -> None:
    carol = person("carol", world.org, Role.ADMIN)
    remove(owner_browser, membership(carol, world.org))
    # world.key was made as `create_api_key` makes keys: with no creator.
    assert ApiKey.objects.get(name="test").created_by is None
    assert calls(world, world.key) == 200


def test_a_removed_members_session_reaches_nothing_of_the_organization(
    world: World,
    owner_browser: Browser,
) -> None:
    person("bob", world.org)
    bob = Browser(world.url)
    assert bob.sign_in("bob").status_code == 302
    assert bob.get("/api/manage/generations/").status_code == 200

    remove(owner_browser, membership(Membership.objects.get(user__username="bob").user, world.org))

    assert bob.get("/api/manage/generations/").status_code == 403
    assert bob.get("/keys/").headers["location"] == "/welcome/"
    bob.close()
