"""Attacker-style: a saved Vertex service account whose `project_id` is not a project id. Its
value goes into the path of Vertex's URL, so `?`, `#`, `/` or `..` in it could point the
organization's calls at another path or model while they are billed at the offering's price.
Such a key is refused when it is saved (the UI, the command, the admin) and, saved anyway (a
row written before the check), when a call would use it: nothing is sent."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from django.core.management import CommandError, call_command

from accounts.models import Role, SavedKey
from billing.models import Attempt
from tests.gateway.calls import ask, save_key, settle, wait_recorded
from tests.gateway.conftest import World, model, offer, provider, service_account
from tests.security.roles_helpers import Browser, person

pytestmark = pytest.mark.security

UPSTREAM_ID = "gemini-3-pro-preview"
ELSEWHERE = "momor-test/locations/global/publishers/google/models/gemini-other?x="
BAD_PROJECTS = [ELSEWHERE, "momor-test#", "../../v1beta/models/x", "Momor-Test", "short"]


def with_project(secret: str, project: str) -> str:
    info = orjson.loads(secret)
    return orjson.dumps({**info, "project_id": project}).decode()


@pytest.fixture
def vertex(world: World, fake_token_endpoint: str) -> Iterator[World]:
    row = provider("vertex", "vertex", f"{world.fake.url}/vertex/v1", key="")
    offer(model("google/gemini-3-pro"), row, UPSTREAM_ID, "2", "12")
    yield world


@pytest.mark.parametrize("project", BAD_PROJECTS)
def test_a_saved_account_with_another_path_as_project_sends_nothing(
    vertex: World, fake_token_endpoint: str, project: str
) -> None:
    save_key(vertex.org, "vertex", with_project(service_account(fake_token_endpoint), project))
    settle()
    response = vertex.post(ask("google/gemini-3-pro"))
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    (attempt,) = Attempt.objects.filter(generation__request_id=request_id)
    assert vertex.fake.requests() == []
    assert attempt.error == (
        "Vertex credentials: the service account's project_id is not a Google Cloud project id"
    )
    assert response.status_code == 502, response.text


@pytest.mark.parametrize("project", ["momor-test", "example.com:momor-test"])
def test_a_project_id_as_google_makes_them_is_called_in_its_place(
    vertex: World, fake_token_endpoint: str, project: str
) -> None:
    save_key(vertex.org, "vertex", with_project(service_account(fake_token_endpoint), project))
    settle()
    assert vertex.post(ask("google/gemini-3-pro")).status_code == 200
    (sent,) = vertex.fake.requests()
    assert sent["path"].startswith(f"/vertex/v1/projects/{project}/locations/global/")


def test_the_ui_refuses_to_save_it(vertex: World, fake_token_endpoint: str) -> None:
    person("alice", vertex.org, Role.OWNER)
    browser = Browser(vertex.url)
    assert browser.sign_in("alice").status_code == 302
    secret = with_project(service_account(fake_token_endpoint), ELSEWHERE)
    answer = browser.post("/provider-keys/", {"provider": "vertex", "secret": secret})
    browser.close()
    assert answer.status_code == 400
    assert "project_id is not a Google Cloud project id" in answer.text
    assert not SavedKey.objects.filter(organization=vertex.org).exists()


def test_the_command_refuses_to_save_it(
    vertex: World, fake_token_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = with_project(service_account(fake_token_endpoint), ELSEWHERE)
    monkeypatch.setenv("VERTEX_SA_FOR_TEST", secret)
    with pytest.raises(CommandError, match="project_id is not a Google Cloud project id"):
        call_command(
            "save_provider_key", org="acme", provider="vertex", key_env="VERTEX_SA_FOR_TEST"
        )
    assert not SavedKey.objects.filter(organization=vertex.org).exists()
