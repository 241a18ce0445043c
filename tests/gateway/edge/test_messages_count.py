"""POST /v1/messages/count_tokens over HTTP, with Anthropic's SDK as the client: Anthropic's
count for an Anthropic offering (sent the body as written but for the model and Momor's
fields), Momor's documented estimate for any other (and where every Anthropic offering
failed), Anthropic's refusal of the body as the answer; nothing recorded or billed, and
counted against the key's rate limit."""

from __future__ import annotations

from typing import Any

import anthropic
import orjson
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.conftest import make_key
from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World
from tests.gateway.edge.messages_world import (
    GPT5_ID,
    OMNI_ID,
    OMNI_ON_ANTHROPIC,
    SONNET,
    SONNET_ID,
    claude,  # noqa: F401 - autouse
    client,
    error_of,
    post,
)
from tests.rate_window import fresh_rate_window

COUNT = "/v1/messages/count_tokens"
MESSAGES: list[Any] = [{"role": "user", "content": "What is the capital of France?"}]
SYSTEM = "Be brief."


def estimate(request: dict[str, Any]) -> int:
    """Momor's estimate, as docs/api.md gives it: the translated request's JSON, four bytes a
    token, rounded up."""
    return -(-len(orjson.dumps(request)) // 4)


def test_anthropic_counts_for_its_offering(world: World) -> None:
    counted = client(world).messages.count_tokens(
        model=SONNET_ID,
        system=SYSTEM,
        messages=MESSAGES,
        extra_body={"provider": {"order": ["anthropic"]}},
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
    )
    assert counted.input_tokens == 6 + 2  # the fake counts words: the message's and the system's
    [sent] = world.fake.requests(SONNET)
    assert sent["path"] == "/anthropic/v1/messages/count_tokens"
    assert sent["body"] == {"model": SONNET, "system": SYSTEM, "messages": MESSAGES}
    assert sent["headers"]["x-api-key"] == MOMOR_UPSTREAM_KEY
    assert sent["headers"]["anthropic-beta"] == "token-counting-2024-11-01"


def test_momor_estimates_for_any_other_offering(world: World) -> None:
    counted = client(world).messages.count_tokens(model=GPT5_ID, system=SYSTEM, messages=MESSAGES)
    translated = {"messages": [{"role": "system", "content": SYSTEM}, *MESSAGES]}
    assert counted.input_tokens == estimate(translated)
    assert world.fake.requests() == []


def test_an_image_counts_what_its_api_documents_for_one(world: World) -> None:
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 100}
    content = [{"type": "text", "text": "What is this?"}, {"type": "image", "source": image}]
    counted = post(
        world, {"model": GPT5_ID, "messages": [{"role": "user", "content": content}]}, path=COUNT
    )
    assert counted.status_code == 200, counted.text
    url = f"data:image/png;base64,{image['data']}"
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    text = len(orjson.dumps({"messages": [{"role": "user", "content": parts}]})) - len(url)
    assert counted.json() == {"input_tokens": -(-text // 4) + 3_779}  # OpenAI's image at most


def test_where_anthropic_cannot_count_the_next_offering_does(world: World) -> None:
    world.fake.script(OMNI_ON_ANTHROPIC, fail={"status": 503})
    counted = client(world).messages.count_tokens(model=OMNI_ID, messages=MESSAGES)
    assert counted.input_tokens == estimate({"messages": MESSAGES})
    assert [r["model"] for r in world.fake.requests()] == [OMNI_ON_ANTHROPIC]


def test_anthropics_refusal_of_the_body_is_the_answer(world: World) -> None:
    world.fake.script(SONNET, fail={"status": 400})
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(world).messages.count_tokens(model=SONNET_ID, messages=MESSAGES)
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "The fake upstream was scripted to fail with status 400.",
        },
    }


def test_nothing_is_recorded_or_billed(world: World) -> None:
    client(world).messages.count_tokens(model=SONNET_ID, messages=MESSAGES)
    client(world).messages.count_tokens(model=GPT5_ID, messages=MESSAGES)
    client(world).messages.create(model=GPT5_ID, max_tokens=10, messages=MESSAGES)
    drain()
    assert list(Generation.objects.values_list("api", flat=True)) == ["messages"]


def test_its_refusals_are_anthropics(world: World) -> None:
    error_of(post(world, {"messages": MESSAGES}, path=COUNT), 400, "invalid_request_error")
    error_of(
        post(world, {"model": "nobody/nothing", "messages": MESSAGES}, path=COUNT),
        404,
        "not_found_error",
    )
    with pytest.raises(anthropic.AuthenticationError):
        client(world, key="sk-momor-not-a-key").messages.count_tokens(
            model=SONNET_ID, messages=MESSAGES
        )


def test_it_counts_against_the_keys_rate_limit(world: World) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="slow", rate_limit=1)
    client(world, key=key).messages.count_tokens(model=GPT5_ID, messages=MESSAGES)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client(world, key=key).messages.count_tokens(model=GPT5_ID, messages=MESSAGES)
    assert caught.value.response.headers["x-ratelimit-limit"] == "1"


def test_a_session_counts_on_the_offering_its_calls_go_to(world: World) -> None:
    world.fake.script(OMNI_ON_ANTHROPIC, fail={"status": 503}, fail_times=1)
    session = {"session_id": "count-session"}
    called = post(world, {"model": OMNI_ID, "max_tokens": 50, "messages": MESSAGES, **session})
    assert called.status_code == 200, called.text
    world.fake.reset()

    counted = post(world, {"model": OMNI_ID, "messages": MESSAGES, **session}, path=COUNT)

    assert counted.json() == {"input_tokens": estimate({"messages": MESSAGES})}
    assert world.fake.requests() == []
