"""The playground's Messages and embeddings calls over HTTP, as its page sends them: on the
member's session with its CSRF token, to the real routes (`POST /v1/messages`,
`POST /v1/embeddings`). Answered in each API's own shape, recorded with the API's name for the
member (no key) and billed to the organization; refusals in the API's shape; and the record the
page reads each call's cost from."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import User

from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.models import Model, Provider
from testkit.fake_embeddings import embedding_vector
from tests.conftest import make_user
from tests.gateway.calls import (
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World, offer
from tests.gateway.edge.messages_world import SONNET, SONNET_ID, add_anthropic, error_of, sse
from tests.gateway.edge.test_session_calls import CSRF, session_cookie

EMBEDDING = "openai/text-embedding-3-small"
TEXT = "Streams arrive piece by piece."


@pytest.fixture
def alice(world: World) -> User:
    return make_user("alice", world.org)


@pytest.fixture(autouse=True)
def apis(world: World) -> None:
    """Anthropic's Claude beside the world's chat models, and an embedding model on OpenAI."""
    add_anthropic(world)
    row = Model.objects.create(id=EMBEDDING, kind="embedding")
    offer(row, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.02", "0")
    settle()


def as_member(
    world: World, member: User, path: str, body: Any, csrf: str | None = CSRF
) -> httpx.Response:
    """A call as the page makes it: the session's cookie, and its CSRF token in X-CSRFToken."""
    cookies = {
        settings.CSRF_COOKIE_NAME: CSRF,
        settings.SESSION_COOKIE_NAME: session_cookie(member),
    }
    headers = {"x-csrftoken": csrf} if csrf else {}
    return httpx.post(world.url + path, json=body, headers=headers, cookies=cookies, timeout=30)


def messages_body(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 1024,
        "system": "Answer in one sentence.",
        "messages": [{"role": "user", "content": "Tell me about streams"}],
        "stream": True,
    }


def recorded(response: httpx.Response) -> Generation:
    assert drain()
    return Generation.objects.get(request_id=response.headers["x-momor-request-id"])


def streamed_text(events: list[tuple[str, Any]]) -> str:
    return "".join(
        data["delta"]["text"]
        for name, data in events
        if name == "content_block_delta" and data["delta"]["type"] == "text_delta"
    )


@pytest.mark.parametrize(
    ("model", "upstream_id", "provider"),
    [("openai/gpt-5", "gpt-5", "openai"), (SONNET_ID, SONNET, "anthropic")],
    ids=["translated", "native"],
)
def test_a_messages_call_streams_anthropics_events_and_is_recorded_as_messages(
    world: World, alice: User, model: str, upstream_id: str, provider: str
) -> None:
    world.fake.script(upstream_id, text=TEXT, chunks=4)
    response = as_member(world, alice, "/v1/messages", messages_body(model))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse(response.text)
    names = [name for name, _ in events]
    assert (names[0], names[-2:]) == ("message_start", ["message_delta", "message_stop"])
    assert streamed_text(events) == TEXT
    request_id = response.headers["x-momor-request-id"]
    usage = events[-2][1]["usage"]
    row = recorded(response)
    assert (row.api, row.user_id, row.api_key, row.streamed) == ("messages", alice.pk, None, True)
    assert (row.provider, row.organization_id, row.model) == (provider, world.org.pk, model)
    assert row.completion_tokens == usage["output_tokens"] > 0
    assert row.cost > 0
    if provider == "openai":  # Momor writes message_start itself with the call's id
        assert events[0][1]["message"]["id"] == f"msg_{request_id}"
    sent = world.fake.requests(upstream_id)[0]["body"]
    system = sent["system"] if provider == "anthropic" else sent["messages"][0]["content"]
    assert system == "Answer in one sentence."


def test_a_refused_messages_call_is_anthropics_error(world: World, alice: User) -> None:
    response = as_member(world, alice, "/v1/messages", messages_body("nobody/nothing"))
    assert "nobody/nothing" in error_of(response, 404, "not_found_error")
    assert recorded(response).api == "messages"


def test_a_messages_call_without_the_csrf_token_is_refused_in_anthropics_shape(
    world: World, alice: User
) -> None:
    response = as_member(world, alice, "/v1/messages", messages_body("openai/gpt-5"), csrf=None)
    assert "CSRF" in error_of(response, 401, "authentication_error")
    assert world.fake.requests() == []


def test_an_embeddings_call_answers_a_vector_per_input_recorded_as_embeddings(
    world: World, alice: User
) -> None:
    inputs = ["the first text", "a second"]
    response = as_member(world, alice, "/v1/embeddings", {"model": EMBEDDING, "input": inputs})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [(item["index"], item["embedding"]) for item in answer["data"]] == [
        (0, embedding_vector("the first text")),
        (1, embedding_vector("a second")),
    ]
    assert answer["model"] == EMBEDDING
    assert answer["usage"]["prompt_tokens"] == 5
    row = recorded(response)
    assert (row.api, row.user_id, row.api_key, row.streamed) == (
        "embeddings",
        alice.pk,
        None,
        False,
    )
    assert (row.prompt_tokens, row.cost) == (5, Decimal("0.02") * 5 / 1_000_000)


def test_a_chat_model_on_the_embeddings_route_is_refused(world: World, alice: User) -> None:
    response = as_member(world, alice, "/v1/embeddings", {"model": "openai/gpt-5", "input": ["a"]})
    assert response.status_code == 404, response.text
    assert response.json()["error"]["message"] == (
        "openai/gpt-5 is a chat model: it answers chat, Messages and Responses calls, not "
        "embeddings calls."
    )


def test_the_page_reads_each_calls_cost_from_its_record(world: World, alice: User) -> None:
    world.fake.script("gpt-5", text=TEXT)
    calls = [
        as_member(world, alice, "/v1/messages", messages_body("openai/gpt-5")),
        as_member(world, alice, "/v1/embeddings", {"model": EMBEDDING, "input": ["one two"]}),
    ]
    assert drain()
    cookies = {settings.SESSION_COOKIE_NAME: session_cookie(alice)}
    for call, api in zip(calls, ["messages", "embeddings"], strict=True):
        request_id = call.headers["x-momor-request-id"]
        record = httpx.get(
            f"{world.url}/v1/generation", params={"id": request_id}, cookies=cookies, timeout=30
        )
        assert record.status_code == 200, record.text
        data = record.json()["data"]
        row = Generation.objects.get(request_id=request_id)
        assert (data["api"], Decimal(data["cost"])) == (api, row.cost)
        assert row.cost > 0
