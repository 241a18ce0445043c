"""Attacker-style: an outsider with their own organization's management key, a member, and an
admin each try to reach past their organization or their role on the management API, the
records lookup and the members' pages; and two owners demote each other at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connections, transaction

from accounts.models import ApiKey, KeyKind, Membership, Role
from accounts.services import AccountError, membership_set_role
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import Browser, manage, person
from tests.ui_helpers import make_generation

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def orgs(gateway: str) -> dict[str, Any]:
    """acme (alice owner, carol admin, bob member, with keys, records and a ledger) and
    globex (mallory owner, with a management key)."""
    acme, globex = make_org("acme", credits=Decimal(5)), make_org("globex", credits=Decimal(7))
    alice, bob = person("alice", acme, Role.OWNER), person("bob", acme)
    person("carol", acme, Role.ADMIN)
    mallory = person("mallory", globex, Role.OWNER)
    _, alices_key = make_key(acme, name="alices", created_by=alice)
    make_key(acme, name="bobs", created_by=bob)
    outsider, _ = make_key(globex, kind=KeyKind.MANAGEMENT, created_by=mallory)
    for n in range(4):
        make_generation(acme, model=f"acme/model-{n}")
    make_generation(globex, model="globex/model")
    return {"acme": acme, "globex": globex, "alices_key": alices_key, "outsider": outsider}


@pytest.fixture
def browser(gateway: str) -> Iterator[Any]:
    made: list[Browser] = []

    def signed_in(username: str) -> Browser:
        made.append(Browser(gateway))
        assert made[-1].sign_in(username).status_code == 302
        return made[-1]

    yield signed_in
    for one in made:
        one.close()


def test_an_outsiders_management_key_finds_nothing_of_another_organization(
    gateway: str, orgs: dict[str, Any]
) -> None:
    key, target = orgs["outsider"], orgs["alices_key"]
    assert manage(gateway, key, "GET", f"keys/{target.pk}/").status_code == 404
    patched = manage(gateway, key, "PATCH", f"keys/{target.pk}/", json={"credit_limit": "0"})
    assert patched.status_code == 404
    assert manage(gateway, key, "POST", f"keys/{target.pk}/revoke/").status_code == 404
    target.refresh_from_db()
    assert (target.revoked_at, target.credit_limit) == (None, None)
    listed = manage(gateway, key, "GET", "keys/").json()
    assert {k["name"] for k in listed} == {""}  # its own management key alone
    models = [g["model"] for g in manage(gateway, key, "GET", "generations/").json()["results"]]
    assert models == ["globex/model"]
    ledger = manage(gateway, key, "GET", "ledger/").json()["results"]
    assert [e["amount"] for e in ledger] == ["7.000000000"]


def test_a_cursor_from_another_organization_pages_only_ones_own(
    gateway: str, orgs: dict[str, Any]
) -> None:
    acme_admin, _ = make_key(orgs["acme"], kind=KeyKind.MANAGEMENT)
    first = manage(gateway, acme_admin, "GET", "generations/", params={"limit": 2}).json()
    cursor = urlsplit(first["next"]).query
    stolen = manage(gateway, orgs["outsider"], "GET", f"generations/?{cursor}").json()
    assert all(g["model"].startswith("globex/") for g in stolen["results"])


def test_the_records_lookup_is_for_the_organization_that_made_the_call(
    gateway: str, orgs: dict[str, Any]
) -> None:
    from billing.models import Generation

    acmes = Generation.objects.filter(organization=orgs["acme"]).first()
    assert acmes is not None
    headers = {"authorization": f"Bearer {orgs['outsider']}"}
    answer = httpx.get(f"{gateway}/v1/generation", params={"id": acmes.request_id}, headers=headers)
    assert answer.status_code == 404


def test_a_member_reaches_only_their_own_keys_and_no_admin_route(
    orgs: dict[str, Any], browser: Any
) -> None:
    bob, alices = browser("bob"), orgs["alices_key"]
    assert bob.api("GET", f"keys/{alices.pk}/").status_code == 404
    assert bob.api("PATCH", f"keys/{alices.pk}/", {"name": "mine"}).status_code == 404
    assert bob.api("POST", f"keys/{alices.pk}/revoke/").status_code == 404
    assert bob.post(f"/keys/{alices.pk}/revoke/").status_code == 404
    assert bob.api("POST", "keys/", {"name": "m", "kind": "management"}).status_code == 403
    assert bob.api("GET", "credits/").status_code == 403
    assert bob.api("GET", "ledger/").status_code == 403
    assert [k["name"] for k in bob.api("GET", "keys/").json()] == ["bobs"]
    alices.refresh_from_db()
    assert (alices.name, alices.revoked_at) == ("alices", None)
    assert not ApiKey.objects.filter(kind=KeyKind.MANAGEMENT, organization=orgs["acme"]).exists()


def test_an_admin_cannot_make_themselves_owner_nor_touch_the_owner(
    orgs: dict[str, Any], browser: Any
) -> None:
    carol = browser("carol")
    own = Membership.objects.get(user__username="carol")
    owner = Membership.objects.get(user__username="alice")
    assert carol.post(f"/members/{own.pk}/role/", {"role": "owner"}).status_code == 403
    assert carol.post(f"/members/{owner.pk}/role/", {"role": "member"}).status_code == 403
    assert carol.post(f"/members/{owner.pk}/remove/").status_code == 403
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert (roles["carol"], roles["alice"]) == (Role.ADMIN, Role.OWNER)


def test_the_switcher_ignores_an_organization_one_is_not_in(
    orgs: dict[str, Any], browser: Any
) -> None:
    mallory = browser("mallory")
    assert (
        mallory.post("/organizations/switch/", {"organization": str(orgs["acme"].pk)}).status_code
        == 302
    )
    assert "Globex" in mallory.get("/").text
    assert "acme/model" not in mallory.get("/generations/").text
    assert [g["model"] for g in mallory.api("GET", "generations/").json()["results"]] == [
        "globex/model"
    ]


def test_two_owners_demoting_each_other_at_once_leave_one_owner(db: None) -> None:
    """Each sees two owners before the other's change is committed: the organization's row
    is locked, so the second waits, sees one owner left, and is refused."""
    acme = make_org("acme")
    alice, olivia = person("alice", acme, Role.OWNER), person("olivia", acme, Role.OWNER)
    outcome: list[str] = []

    def demote_alice() -> None:
        try:
            membership_set_role(membership=Membership.objects.get(user=alice), role=Role.MEMBER)
            outcome.append("demoted")
        except AccountError as exc:
            outcome.append(str(exc))
        finally:
            connections.close_all()

    other = threading.Thread(target=demote_alice)
    with transaction.atomic():
        membership_set_role(membership=Membership.objects.get(user=olivia), role=Role.MEMBER)
        other.start()
        other.join(timeout=1.5)  # it waits on the lock, or has already gone through
    other.join(timeout=10)
    assert outcome == ["an organization keeps at least one owner"]
    assert Membership.objects.filter(organization=acme, role=Role.OWNER).count() == 1
