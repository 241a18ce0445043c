"""Bad rows stay local: a stored provider key that the current MOMOR_ENCRYPTION_KEY cannot
decrypt (saved before the key was rotated) is skipped and logged without its secret; its
offerings fall to Momor's key; its organization's calls and every other organization's
refresh go on; the admin and the members' page show it as such."""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from accounts.models import Role, SavedKey
from billing.models import Attempt, Generation
from billing.recording.hand_off import drain
from gateway.models import Provider
from tests.conftest import make_key, make_org, make_user
from tests.gateway.calls import (
    ask,
    save_key,
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World

OLD_SECRET = "acme-openai-key-from-before-WXYZ"


def saved_before_rotation(world: World, place: str = "openai") -> SavedKey:
    """A key the organization saved under the encryption key used before the current one."""
    row = SavedKey(organization=world.org, provider=place)
    with override_settings(ENCRYPTION_KEY="the-encryption-key-before-rotation"):
        row.set_secret(OLD_SECRET)
    row.save()
    return row


def sent_key(world: World, upstream_id: str) -> str:
    return str(world.fake.requests(upstream_id)[-1]["headers"]["authorization"])


def test_a_key_that_cannot_be_decrypted_falls_to_momors_key(world: World) -> None:
    saved_before_rotation(world)
    fresh_key, _ = make_key(world.org, name="first seen after the rotation")
    response = world.post(ask(), key=fresh_key)
    assert response.status_code == 200, response.text
    assert sent_key(world, "gpt-5") == f"Bearer {MOMOR_UPSTREAM_KEY}"
    assert drain()
    row = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert list(Attempt.objects.filter(generation=row).values_list("key_source", flat=True)) == [
        "momor"
    ]


def test_the_other_keys_of_the_organization_still_serve_its_calls(world: World) -> None:
    saved_before_rotation(world)
    save_key(world.org, "azure@eu", "acme-azure-eu-key")
    settle()
    world.fake.script("gpt-5", fail={"status": 503})
    response = world.post(ask())
    assert response.status_code == 200, response.text
    assert world.fake.requests("gpt-5-azure-eu")[-1]["headers"]["api-key"] == "acme-azure-eu-key"


def test_it_no_longer_stops_the_refresh_for_every_organization(world: World) -> None:
    globex = make_org("globex", credits=Decimal(10))
    globex_key, _ = make_key(globex, name="globex key")
    assert world.post(ask()).status_code == 200
    assert world.post(ask(), key=globex_key).status_code == 200
    saved_before_rotation(world)
    save_key(globex, "openai", "globex-own-openai-key")
    deadline = time.monotonic() + 10
    while sent_key(world, "gpt-5") != "Bearer globex-own-openai-key":
        assert time.monotonic() < deadline, "globex's new key never reached the gateway"
        time.sleep(0.2)
        assert world.post(ask(), key=globex_key).status_code == 200
    assert world.post(ask()).status_code == 200


def test_it_is_logged_once_without_its_secret(world: World, caplog: Any) -> None:
    assert world.post(ask()).status_code == 200  # the gateway now holds acme
    with caplog.at_level(logging.ERROR, logger="gateway.request.identity"):
        row = saved_before_rotation(world)
        for _ in range(3):
            settle()
        time.sleep(1)  # the gateway's own refresher reads it a few more times meanwhile
    found = [r.getMessage() for r in caplog.records if r.name == "gateway.request.identity"]
    assert len(found) == 1
    assert f"saved key {row.pk} " in found[0]
    assert "cannot be decrypted" in found[0]
    assert OLD_SECRET not in found[0]
    assert row.secret_encrypted not in found[0]


def test_a_momor_key_that_cannot_be_decrypted_falls_to_its_environment_variable(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOMOR_PROVIDER_KEY_OPENAI_TEST", "openai-key-from-the-environment")
    openai = Provider.objects.get(name="openai")
    openai.key_env = "MOMOR_PROVIDER_KEY_OPENAI_TEST"
    with override_settings(ENCRYPTION_KEY="the-encryption-key-before-rotation"):
        openai.set_key("momor-openai-key-from-before")
    openai.save()
    settle()
    response = world.post(ask("openai/gpt-5-mini"))
    assert response.status_code == 200, response.text
    assert sent_key(world, "gpt-5-mini") == "Bearer openai-key-from-the-environment"


def test_the_admin_shows_it_as_skipped(world: World, admin_client: Client) -> None:
    row = saved_before_rotation(world)
    skipped = "cannot be decrypted (MOMOR_ENCRYPTION_KEY changed): skipped, save it again"
    listed = admin_client.get(reverse("admin:accounts_savedkey_changelist")).content.decode()
    assert skipped in listed
    page = admin_client.get(reverse("admin:accounts_savedkey_change", args=[row.pk]))
    assert skipped in page.content.decode()
    assert OLD_SECRET not in page.content.decode()
    openai = Provider.objects.get(name="openai")
    with override_settings(ENCRYPTION_KEY="the-encryption-key-before-rotation"):
        openai.set_key("momor-openai-key-from-before")
    openai.save()
    providers = admin_client.get(reverse("admin:gateway_provider_changelist")).content.decode()
    assert "skipped: cannot be decrypted" in providers
    assert "MOMOR_ENCRYPTION_KEY changed since it was stored: set it again" in providers


def test_the_members_page_shows_it_to_replace(world: World) -> None:
    saved_before_rotation(world)
    alice = make_user("alice", world.org, Role.OWNER)
    client = Client()
    client.force_login(alice)
    page = client.get("/provider-keys/").content.decode()
    assert "cannot be decrypted: replace it" in page
    assert OLD_SECRET not in page
