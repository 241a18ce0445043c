"""A poisoned provider error: the provider's refusal quotes the key it was sent (OpenAI's 401
says "Incorrect API key provided: sk-..."). Neither the client's answer, nor the attempt on the
record, nor `GET /v1/generation` may repeat it: Momor's key and a saved key, plain and
streamed, before output and mid-stream, and when every candidate failed; for every adapter.
A masked key keeps its last four characters at most."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from billing.models import Attempt, Generation
from tests.gateway.calls import ask, events, save_key, settle, wait_recorded
from tests.gateway.conftest import World, model, offer, provider, service_account

pytestmark = pytest.mark.security

OPENAI_REFUSAL = (
    "Incorrect API key provided: {key}. You can find your API key at "
    "https://platform.openai.com/account/api-keys."
)
Json = dict[str, Any]


def openai_error(status: int) -> Json:
    code = "invalid_api_key" if status == 401 else None
    kind = "invalid_request_error" if status == 401 else "server_error"
    message = OPENAI_REFUSAL if status == 401 else f"Upstream overloaded for key {{key}} ({status})"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(status: int) -> Json:
    kind = "authentication_error" if status == 401 else "api_error"
    return {"type": "error", "error": {"type": kind, "message": "invalid x-api-key: {key}"}}


def google_error(status: int) -> Json:
    name = "UNAUTHENTICATED" if status == 401 else "UNAVAILABLE"
    message = "API key not valid: {key}. Please pass a valid API key."
    return {"error": {"code": status, "message": message, "status": name}}


@dataclass(frozen=True)
class Api:
    name: str
    path: str
    key: Callable[[str], str]
    refusal: Callable[[int], Json]


def bearer_like(prefix: str) -> Callable[[str], str]:
    return lambda token_uri: prefix + secrets.token_urlsafe(36)


APIS = [
    Api("openai", "v1", bearer_like("sk-proj-"), openai_error),
    Api("azure", "openai/v1", lambda _: secrets.token_hex(16), openai_error),
    Api("mistral", "v1", bearer_like(""), openai_error),
    Api("deepinfra", "v1/openai", bearer_like(""), openai_error),
    Api("openai_compatible", "v1", bearer_like("vllm-"), openai_error),
    Api("anthropic", "", bearer_like("sk-ant-api03-"), anthropic_error),
    Api("gemini", "v1beta", bearer_like("AIzaSy"), google_error),
    Api("vertex", "v1", service_account, google_error),
]


@dataclass
class Case:
    world: World
    model: str
    upstream_id: str
    api: Api


def build(world: World, api: Api, source: str, token_uri: str) -> Case:
    """One model served by one offering of this API, on Momor's key or on acme's own."""
    name = f"{api.name.replace('_', '-')}-{source}"
    base = f"{world.fake.url}/{name}" + (f"/{api.path}" if api.path else "")
    key = api.key(token_uri)
    row = provider(name, api.name, base, key=key if source == "momor" else "")
    if source == "own":
        save_key(world.org, name, key)
    model_id, upstream_id = f"sec/{name}", f"echo-{name}"
    offer(model(model_id), row, upstream_id, "1", "1")
    settle()
    return Case(world, model_id, upstream_id, api)


@pytest.fixture(params=[a.name for a in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    return next(a for a in APIS if a.name == request.param)


@pytest.fixture(params=["momor", "own"])
def case(world: World, fake_token_endpoint: str, api: Api, request: pytest.FixtureRequest) -> Case:
    return build(world, api, str(request.param), fake_token_endpoint)


def sent_key(case: Case) -> str:
    """The credential the provider received: the key, or Vertex's access token."""
    (call,) = case.world.fake.requests(case.upstream_id)
    headers = call["headers"]
    for name in ("api-key", "x-api-key", "x-goog-api-key"):
        if name in headers:
            return str(headers[name])
    return str(headers["authorization"]).removeprefix("Bearer ")


def masked(key: str) -> str:
    return "****" + key[-4:]


def generation(case: Case, request_id: str) -> Json:
    wait_recorded(request_id)
    response = httpx.get(
        f"{case.world.url}/v1/generation",
        params={"id": request_id},
        headers={"authorization": f"Bearer {case.world.key}"},
    )
    assert response.status_code == 200, response.text
    found: Json = response.json()["data"]
    return found


def assert_scrubbed_everywhere(case: Case, response: httpx.Response, key: str) -> None:
    """The key is in neither the answer, the stored record nor the record as read back; the
    attempt's error names it by its mask."""
    assert len(key) >= 16 and key not in response.text
    request_id = response.headers["x-momor-request-id"]
    record = generation(case, request_id)
    assert key not in str(record)
    (attempt,) = record["attempts"]
    assert masked(key) in attempt["error"], attempt["error"]
    stored = Attempt.objects.filter(generation__request_id=request_id)
    assert all(key not in row.error for row in stored)
    assert key not in Generation.objects.get(request_id=request_id).error


def test_a_refusal_quoting_the_key_is_masked_on_a_plain_call(case: Case) -> None:
    case.world.fake.script(case.upstream_id, fail={"status": 401, "body": case.api.refusal(401)})
    response = case.world.post(ask(case.model))
    key = sent_key(case)
    assert response.status_code in (401, 502), response.text
    assert_scrubbed_everywhere(case, response, key)
    if response.status_code == 401:  # Momor's key: the provider's message, masked
        assert masked(key) in response.json()["error"]["message"]


def test_a_refusal_quoting_the_key_is_masked_on_a_streamed_call(case: Case) -> None:
    case.world.fake.script(case.upstream_id, fail={"status": 401, "body": case.api.refusal(401)})
    response = case.world.stream(ask(case.model))
    key = sent_key(case)
    assert response.status_code in (401, 502), response.text
    assert_scrubbed_everywhere(case, response, key)


def test_an_error_event_quoting_the_key_mid_stream_is_masked(case: Case) -> None:
    case.world.fake.script(
        case.upstream_id,
        text="Hello there, friend.",
        stream_error_after=1,
        stream_error_message="Incorrect API key provided: {key}",
    )
    response = case.world.stream(ask(case.model))
    key = sent_key(case)
    assert response.status_code == 200, response.text
    error_chunk = events(response.text)[-1]
    assert error_chunk["choices"][0]["finish_reason"] == "error"
    assert error_chunk["error"]["message"] == f"Incorrect API key provided: {masked(key)}"
    assert_scrubbed_everywhere(case, response, key)


def test_the_503_after_every_candidate_failed_is_masked(case: Case) -> None:
    case.world.fake.script(case.upstream_id, fail={"status": 503, "body": case.api.refusal(503)})
    response = case.world.post(ask(case.model))
    key = sent_key(case)
    assert response.status_code == 503, response.text
    assert masked(key) in response.json()["error"]["message"]
    assert_scrubbed_everywhere(case, response, key)
