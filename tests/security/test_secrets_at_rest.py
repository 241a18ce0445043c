"""No key in plaintext anywhere in the database: provider keys stored through every path (the
admin, the members' UI, `save_provider_key`) and Momor keys made through every path (the UI,
the management API, `create_api_key`), then calls whose providers quote the key they were sent,
then every table of the database read as text (sessions decoded) and searched."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client

from accounts.models import SavedKey
from billing.recording.hand_off import drain
from gateway.models import Provider
from tests.child_process import manage
from tests.conftest import make_user
from tests.gateway.calls import ask, events, settle, wait_recorded
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World

pytestmark = pytest.mark.security

ADMIN_MOMOR_KEY = "sk-proj-adminStoredMistralKey0123456789-A1"
ADMIN_SAVED = "sk-acme-admin-saved-deepinfra-0123456789-B2"
ADMIN_SAVED_AGAIN = "sk-acme-admin-saved-deepinfra-9876543210-C3"
UI_SAVED = "sk-acme-ui-saved-openai-key-0123456789-D4"
COMMAND_SAVED = "sk-acme-command-saved-azure-0123456789-E5"
MOMOR_KEY = re.compile(r"sk-momor-[A-Za-z0-9_\-]{43}")
ECHO = {
    "status": 401,
    "body": {"error": {"message": "Incorrect API key provided: {key}.", "type": "x", "code": None}},
}


def admin(world: World) -> None:
    """An operator sets Momor's key for mistral, and saves acme's deepinfra key, then
    replaces it: every change is in the admin's history."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pass-123!")
    client = Client()
    client.force_login(root)
    mistral = Provider.objects.get(name="mistral")
    form = {
        "name": "mistral", "display_name": "", "api": "mistral",
        "base_url": mistral.base_url, "key_env": "", "new_key": ADMIN_MOMOR_KEY,
        "regions-TOTAL_FORMS": "0", "regions-INITIAL_FORMS": "0",
        "regions-MIN_NUM_FORMS": "0", "regions-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    done = client.post(f"/admin/gateway/provider/{mistral.pk}/change/", form)
    assert done.status_code == 302
    saved = {"organization": str(world.org.pk), "provider": "deepinfra", "label": "di"}
    done = client.post("/admin/accounts/savedkey/add/", {**saved, "secret": ADMIN_SAVED})
    assert done.status_code == 302
    row = SavedKey.objects.get(provider="deepinfra")
    change = f"/admin/accounts/savedkey/{row.pk}/change/"
    assert client.post(change, {**saved, "secret": ADMIN_SAVED_AGAIN}).status_code == 302


def members_ui_and_api(world: World) -> list[str]:
    """acme's owner saves an openai key and makes a Momor key in the UI, and another through
    the management API; the new Momor keys are returned."""
    client = Client()
    client.force_login(make_user("alice", world.org, "owner"))
    done = client.post("/provider-keys/", {"provider": "openai", "secret": UI_SAVED})
    assert done.status_code == 302
    page = client.post("/keys/", {"name": "ui"}).content.decode()
    api = client.post("/api/manage/keys/", {"name": "api"}, content_type="application/json")
    assert api.status_code == 201
    return [MOMOR_KEY.findall(page)[0], api.json()["key"]]


def commands() -> str:
    args = ["--org", "acme", "--provider", "azure", "--key-env", "MOMOR_PROVIDER_KEY_ACME"]
    done = manage("save_provider_key", *args, MOMOR_PROVIDER_KEY_ACME=COMMAND_SAVED)
    assert done.returncode == 0, done.stderr
    made = manage("create_api_key", "--org", "acme", "--name", "cli")
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def calls(world: World, keys: list[str]) -> None:
    """A call per provider: the first try on each upstream is refused with the key quoted."""
    for upstream_id in ("gpt-5", "gpt-5-azure-eu", "mistral-small-latest"):
        world.fake.script(upstream_id, fail=ECHO, fail_times=1)
    world.fake.script("deepseek-ai/DeepSeek-R1", text="a b c", stream_error_after=1,
                      stream_error_message="key {key} was revoked")  # fmt: skip
    answers = [
        world.post(ask("openai/gpt-5"), key=keys[0]),  # acme's key, then Momor's
        world.post(ask("openai/gpt-5", provider={"order": ["azure@eu"]}), key=keys[1]),
        world.post(ask("mistral/mistral-small"), key=keys[2]),  # Momor's key alone: refused
        world.stream(ask("deepseek/deepseek-r1"), key=keys[3]),
    ]
    assert [a.status_code for a in answers] == [200, 200, 401, 200], [a.text for a in answers]
    error = events(answers[3].text)[-1]["error"]["message"]
    assert error == f"key ****{ADMIN_SAVED_AGAIN[-4:]} was revoked"
    for answer in answers:
        wait_recorded(answer.headers["x-momor-request-id"])
    drain()


def every_row_as_text() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        tables = [name for (name,) in cursor.fetchall()]
        found = {}
        for table in tables:
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # noqa: S608 - names from the catalog
            found[table] = "\n".join(row for (row,) in cursor.fetchall())
    sessions = [str(SessionStore().decode(s.session_data)) for s in Session.objects.all()]
    found["django_session (decoded)"] = "\n".join(sessions)
    return found


def test_no_key_is_stored_in_plaintext_anywhere(world: World, settings: Any) -> None:
    admin(world)
    momor_keys = [*members_ui_and_api(world), commands()]
    settle()
    calls(world, [*momor_keys, world.key])
    plaintexts = [
        ADMIN_MOMOR_KEY, ADMIN_SAVED, ADMIN_SAVED_AGAIN, UI_SAVED, COMMAND_SAVED,
        MOMOR_UPSTREAM_KEY, world.key, *momor_keys,
    ]  # fmt: skip
    tables = every_row_as_text()
    assert "django_admin_log" in tables and "billing_attempt" in tables
    assert "Incorrect API key provided: ****" in tables["billing_attempt"]
    leaks = [(t, p) for t, text in tables.items() for p in plaintexts if p in text]
    assert leaks == []
