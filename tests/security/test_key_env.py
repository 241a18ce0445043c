"""key_env naming one of Momor's own settings: the catalog file, the admin and
`save_provider_key` refuse it, and a row already in the database that names one gets no key,
so Momor never sends its secret key or encryption key as a Bearer token to a base_url."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Organization, SavedKey
from gateway.models import Provider
from tests.child_process import manage
from tests.gateway.calls import ask, settle
from tests.gateway.conftest import World, model, offer

pytestmark = pytest.mark.security

FORBIDDEN = ["MOMOR_SECRET_KEY", "MOMOR_ENCRYPTION_KEY", "DATABASE_URL", "REDIS_URL", "HOME"]
RULE = (
    "name a variable MOMOR_PROVIDER_KEY_<NAME> (capitals, digits, _) or one of "
    "ANTHROPIC_API_KEY, AZURE_API_KEY, AZURE_OPENAI_API_KEY, DEEPINFRA_API_KEY, GEMINI_API_KEY, "
    "GOOGLE_API_KEY, MISTRAL_API_KEY, OPENAI_API_KEY, VERTEX_SERVICE_ACCOUNT_JSON"
)
CATALOG = """
[[providers]]
name = "exfil"
api = "openai_compatible"
base_url = "https://collector.example/v1"
key_env = "{key_env}"
"""


def catalog(tmp_path: Path, key_env: str) -> str:
    path = tmp_path / "catalog.toml"
    path.write_text(CATALOG.format(key_env=key_env))
    return str(path)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("key_env", FORBIDDEN)
def test_load_catalog_refuses_a_key_env_outside_the_rule(tmp_path: Path, key_env: str) -> None:
    done = manage("load_catalog", catalog(tmp_path, key_env))
    assert done.returncode == 1
    assert (
        done.stderr == f"CommandError: provider 'exfil': key_env {key_env} is not allowed: {RULE}\n"
    )
    assert not Provider.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("key_env", ["MOMOR_PROVIDER_KEY_COLLECTOR", "OPENAI_API_KEY"])
def test_load_catalog_takes_a_key_env_inside_the_rule(tmp_path: Path, key_env: str) -> None:
    done = manage("load_catalog", catalog(tmp_path, key_env))
    assert done.returncode == 0, done.stderr
    assert Provider.objects.get().key_env == key_env


def admin_client() -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123!")
    client = Client()
    client.force_login(user)
    return client


def provider_form(key_env: str) -> dict[str, str]:
    return {
        "name": "exfil",
        "display_name": "",
        "api": "openai_compatible",
        "base_url": "https://collector.example/v1",
        "key_env": key_env,
        "new_key": "",
        "regions-TOTAL_FORMS": "0",
        "regions-INITIAL_FORMS": "0",
        "regions-MIN_NUM_FORMS": "0",
        "regions-MAX_NUM_FORMS": "1000",
    }


@pytest.mark.django_db
@pytest.mark.parametrize("key_env", FORBIDDEN)
def test_the_admin_refuses_a_key_env_outside_the_rule(key_env: str) -> None:
    response = admin_client().post("/admin/gateway/provider/add/", provider_form(key_env))
    assert response.status_code == 200
    assert f"key_env {key_env} is not allowed" in response.content.decode()
    assert not Provider.objects.exists()


@pytest.mark.django_db
def test_the_admin_takes_a_key_env_inside_the_rule() -> None:
    form = provider_form("MOMOR_PROVIDER_KEY_COLLECTOR")
    response = admin_client().post("/admin/gateway/provider/add/", form)
    assert response.status_code == 302
    assert Provider.objects.get().key_env == "MOMOR_PROVIDER_KEY_COLLECTOR"


def test_a_row_naming_a_forbidden_variable_gets_no_key(world: World) -> None:
    """Written behind the rule's back (an older row, a raw update): read, it gives no key."""
    secret = os.environ["MOMOR_SECRET_KEY"]
    row = Provider.objects.create(
        name="exfil", api="openai_compatible", base_url=f"{world.fake.url}/exfil/v1"
    )
    offer(model("exfil/model"), row, "exfil-model", "0", "0")
    row.key_env = "MOMOR_SECRET_KEY"
    row.save()  # no form, no loader: nothing checks the name on the way in
    settle()
    response = world.post(ask("exfil/model"))
    assert response.status_code == 404, response.text
    assert world.fake.requests("exfil-model") == []
    assert secret not in response.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("variable", ["MOMOR_SECRET_KEY", "MOMOR_ENCRYPTION_KEY", "DATABASE_URL"])
def test_save_provider_key_refuses_to_read_a_momor_setting(
    acme: Organization, variable: str
) -> None:
    Provider.objects.create(name="openai", api="openai", base_url="https://api.openai.com/v1")
    args = ["--org", "acme", "--provider", "openai", "--key-env", variable]
    done = manage("save_provider_key", *args)  # each of them is set in the environment
    assert done.returncode == 1
    assert done.stderr == (
        f"CommandError: {variable} is one of Momor's own settings, never a provider's key\n"
    )
    assert not SavedKey.objects.exists()
