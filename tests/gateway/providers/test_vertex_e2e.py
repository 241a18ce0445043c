"""Vertex AI end to end: the Gemini translation on Vertex's URL, authenticated with a throwaway
service account whose token endpoint is the fake's, over real HTTP through Momor."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from gateway.catalog.state import STATE
from tests.gateway.calls import settle as refresh
from tests.gateway.conftest import World, model, offer, provider, service_account

PROJECT = "momor-test"
ASK = [{"role": "user", "content": "What is the capital of France?"}]
ASKED = [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]
PRO = "gemini-3-pro-preview"
REGIONAL = "gemini-2.5-pro"


@pytest.fixture
def vertex(world: World, fake_token_endpoint: str) -> World:
    """Gemini 3 Pro on Vertex's global location, Gemini 2.5 Pro in us-central1."""
    row = provider(
        "vertex",
        "vertex",
        f"{world.fake.url}/vertex/v1",
        key=service_account(fake_token_endpoint, PROJECT),
        regions={"us-central1": f"{world.fake.url}/vertex-us/v1"},
    )
    offer(model("google/gemini-3-pro"), row, PRO, "2", "12", tools=True)
    offer(model("google/gemini-2.5-pro"), row, REGIONAL, "1.25", "10", region="us-central1")
    settle("google/gemini-3-pro", "google/gemini-2.5-pro")
    tokens(world, expires_in=3599)
    return world


def settle(*model_ids: str) -> None:
    """Bring the running gateway's catalog up to the database, and check it holds these."""
    refresh()
    catalog = STATE.catalog
    assert catalog is not None and all(m in catalog.models for m in model_ids), model_ids


def tokens(world: World, *, expires_in: int) -> None:
    """Set the lifetime of the tokens the fake issues, and zero its count of exchanges."""
    url = f"{world.fake.url}/_fake/tokens"
    httpx.post(url, json={"expires_in": expires_in}, trust_env=False).raise_for_status()


def exchanges(world: World) -> int:
    response = httpx.get(f"{world.fake.url}/_fake/tokens", trust_env=False)
    count: int = response.json()["exchanges"]
    return count


def model_path(base: str, location: str, upstream_id: str, verb: str) -> str:
    return (
        f"{base}/projects/{PROJECT}/locations/{location}/publishers/google/models/"
        f"{upstream_id}:{verb}"
    )


def test_it_answers_a_plain_call_on_the_global_location(vertex: World) -> None:
    response = vertex.post({"model": "google/gemini-3-pro", "messages": ASK})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == "google/gemini-3-pro"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello from the fake upstream."},
            "logprobs": None,
            "finish_reason": "stop",
            "native_finish_reason": "STOP",
        }
    ]
    (call,) = vertex.fake.requests(PRO)
    assert call["path"] == model_path("/vertex/v1", "global", PRO, "generateContent")
    assert call["headers"]["authorization"].startswith("Bearer ya29.fake-")
    assert "x-goog-api-key" not in call["headers"]
    assert call["body"] == {"contents": ASKED}
    assert exchanges(vertex) == 1


def test_it_streams_from_a_region(vertex: World) -> None:
    response = vertex.stream(
        {"model": "google/gemini-2.5-pro", "messages": ASK, "reasoning_effort": "low"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "vertex@us-central1"
    blocks = response.text.removesuffix("\n\n").split("\n\n")
    assert blocks[-1] == "data: [DONE]"
    chunks: list[dict[str, Any]] = [orjson.loads(b.removeprefix("data: ")) for b in blocks[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "Hello from the fake upstream."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    (call,) = vertex.fake.requests(REGIONAL)
    assert call["path"] == model_path(
        "/vertex-us/v1", "us-central1", REGIONAL, "streamGenerateContent"
    )
    # The offering takes no effort, so none is sent.
    assert call["body"] == {"contents": ASKED}


def test_a_token_is_exchanged_once_for_several_calls(vertex: World) -> None:
    for _ in range(3):
        response = vertex.post({"model": "google/gemini-3-pro", "messages": ASK})
        assert response.status_code == 200, response.text
    assert exchanges(vertex) == 1
    bearers = {r["headers"]["authorization"] for r in vertex.fake.requests(PRO)}
    assert len(bearers) == 1


def test_a_token_inside_the_refresh_margin_is_exchanged_again(vertex: World) -> None:
    tokens(vertex, expires_in=120)
    first = vertex.post({"model": "google/gemini-3-pro", "messages": ASK})
    second = vertex.post({"model": "google/gemini-3-pro", "messages": ASK})
    assert (first.status_code, second.status_code) == (200, 200)
    assert exchanges(vertex) == 2
    bearers = [r["headers"]["authorization"] for r in vertex.fake.requests(PRO)]
    assert bearers[0] != bearers[1]


def test_a_refused_service_account_fails_that_try(world: World, fake_token_endpoint: str) -> None:
    row = provider(
        "vertex",
        "vertex",
        f"{world.fake.url}/vertex/v1",
        key=service_account(f"{world.fake.url}/no-token-here"),
    )
    offer(model("google/gemini-3-pro"), row, PRO, "2", "12")
    settle("google/gemini-3-pro")
    response = world.post({"model": "google/gemini-3-pro", "messages": ASK})
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "providers_unavailable"
    assert world.fake.requests(PRO) == []
