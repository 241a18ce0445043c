"""A poisoned token endpoint: an organization's admin saves a Vertex service account whose
`token_uri` points where Momor should never go (loopback here, the fake standing in for an
internal service), hoping Momor POSTs there, follows a redirect, or hands back the reply. The
exchange happens only at the one configured endpoint, through the outbound guard, no redirect
followed, and a failed exchange is reported by its status alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from billing.models import Attempt
from gateway.models import Provider
from tests.gateway.calls import ask, save_key, settle, wait_recorded
from tests.gateway.conftest import World, model, offer, provider, service_account

pytestmark = pytest.mark.security

UPSTREAM_ID = "gemini-3-pro-preview"
INTERNAL = "internal-admin-page: db password hunter2, instance metadata follows"


def script_tokens(world: World, **script: Any) -> None:
    body = {"expires_in": 3599, **script}
    httpx.post(f"{world.fake.url}/_fake/tokens", json=body, trust_env=False).raise_for_status()


def exchanges(world: World) -> int:
    response = httpx.get(f"{world.fake.url}/_fake/tokens", trust_env=False)
    count: int = response.json()["exchanges"]
    return count


@pytest.fixture
def vertex(world: World) -> Iterator[World]:
    """A Vertex provider with no key of Momor's: acme's saved service account serves it."""
    row = provider("vertex", "vertex", f"{world.fake.url}/vertex/v1", key="")
    offer(model("google/gemini-3-pro"), row, UPSTREAM_ID, "2", "12")
    script_tokens(world)
    yield world
    script_tokens(world)


def call(world: World, secret: str) -> tuple[httpx.Response, list[Attempt]]:
    save_key(world.org, "vertex", secret)
    settle()
    response = world.post(ask("google/gemini-3-pro"))
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    return response, list(Attempt.objects.filter(generation__request_id=request_id))


def test_a_token_uri_other_than_googles_is_never_called(vertex: World) -> None:
    script_tokens(vertex, fail={"status": 400, "body": INTERNAL})
    response, (attempt,) = call(vertex, service_account(f"{vertex.fake.url}/token"))
    assert exchanges(vertex) == 0
    assert response.status_code == 502, response.text
    assert attempt.error == (
        "Vertex credentials: the service account's token_uri is not Google's token endpoint "
        "(https://oauth2.googleapis.com/token)"
    )
    assert vertex.fake.requests(UPSTREAM_ID) == []


def test_the_configured_endpoint_on_loopback_is_refused_by_the_guard(
    vertex: World, settings: Any
) -> None:
    settings.MOMOR_GOOGLE_TOKEN_URL = f"{vertex.fake.url}/token"
    response, (attempt,) = call(vertex, service_account(settings.MOMOR_GOOGLE_TOKEN_URL))
    assert exchanges(vertex) == 0
    assert attempt.error == "Vertex credentials: the token endpoint could not be called"
    assert response.status_code == 503, response.text


def test_a_name_that_resolves_to_loopback_is_refused_after_resolution(
    vertex: World, settings: Any
) -> None:
    port = vertex.fake.url.rsplit(":", 1)[1]
    settings.MOMOR_GOOGLE_TOKEN_URL = f"http://localhost:{port}/token"
    _, (attempt,) = call(vertex, service_account(settings.MOMOR_GOOGLE_TOKEN_URL))
    assert exchanges(vertex) == 0
    assert attempt.error == "Vertex credentials: the token endpoint could not be called"


def test_the_body_of_a_failed_exchange_reaches_neither_answer_nor_record(
    vertex: World, fake_token_endpoint: str
) -> None:
    script_tokens(vertex, fail={"status": 400, "body": INTERNAL})
    response, (attempt,) = call(vertex, service_account(fake_token_endpoint))
    assert exchanges(vertex) == 1
    assert attempt.error == "Vertex credentials: the token exchange failed (HTTP 400)"
    assert "hunter2" not in response.text
    lookup = httpx.get(
        f"{vertex.url}/v1/generation",
        params={"id": response.headers["x-momor-request-id"]},
        headers={"authorization": f"Bearer {vertex.key}"},
    )
    assert lookup.status_code == 200 and "hunter2" not in lookup.text


def test_a_redirect_from_the_token_endpoint_is_not_followed(
    vertex: World, fake_token_endpoint: str
) -> None:
    script_tokens(vertex, redirect=f"{vertex.fake.url}/v1/chat/completions")
    _, (attempt,) = call(vertex, service_account(fake_token_endpoint))
    assert exchanges(vertex) == 1
    assert attempt.error == "Vertex credentials: the token exchange failed (HTTP 302)"
    assert vertex.fake.requests() == []


def test_a_forged_account_does_not_get_the_token_of_momors_account(
    vertex: World, fake_token_endpoint: str
) -> None:
    """A saved account copying the email and key id of Momor's own (but not its private key)
    gets no token cached for Momor's."""
    momor_account = service_account(fake_token_endpoint)
    row = Provider.objects.get(name="vertex")
    row.set_key(momor_account)
    row.save()
    settle()
    assert vertex.post(ask("google/gemini-3-pro")).status_code == 200
    known = orjson.loads(momor_account)
    forged = orjson.loads(service_account(fake_token_endpoint)) | {
        "client_email": known["client_email"],
        "private_key_id": known["private_key_id"],
    }
    call(vertex, orjson.dumps(forged).decode())
    bearers = [r["headers"]["authorization"] for r in vertex.fake.requests(UPSTREAM_ID)]
    assert len(bearers) == 2 and bearers[0] != bearers[1]
    assert exchanges(vertex) == 2
