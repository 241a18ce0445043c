"""POST /v1/messages served by Anthropic over HTTP, with Anthropic's SDK as the client: the body
reaches Anthropic as written (system, cache_control, thinking blocks and their signatures,
tool_use and tool_result, metadata, stop_sequences, betas) but for the model and Momor's
routing fields, and the answer and the events come back as Anthropic wrote them, with Momor's
id; recorded as a messages call and billed on Anthropic's usage, cache reads and writes
included."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from billing.models import Generation
from testkit.fake_anthropic import fake_signature
from tests.gateway.calls import settled_world, tried, wait_recorded  # noqa: F401 - autouse
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World
from tests.gateway.edge.messages_world import (
    OMNI_ID,
    OMNI_ON_ANTHROPIC,
    OMNI_ON_OPENAI,
    SONNET,
    SONNET_ID,
    claude,  # noqa: F401 - autouse
    client,
    direct,
    post,
    sse,
)

THOUGHT = "The user asks for the capital."
BETA = "interleaved-thinking-2025-05-14"
# A tool loop in progress with thinking on: every block kind Momor must not touch.
ASKED: dict[str, Any] = {
    "max_tokens": 2048,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "What is the capital of France?",
                    "cache_control": {"type": "ephemeral", "ttl": "5m"},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": THOUGHT, "signature": fake_signature(THOUGHT)},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "France"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Paris"}],
        },
    ],
    "tools": [
        {
            "name": "lookup",
            "description": "Look a country up.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    ],
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "metadata": {"user_id": "user-1"},
    "stop_sequences": ["END"],
}
ROUTING = {"provider": {"order": ["anthropic"]}, "session_id": "s-1"}


@pytest.fixture(autouse=True)
def thinking_answer(world: World) -> None:
    world.fake.script(SONNET, reasoning="Paris, from the tool.", text="Paris.")


def test_the_body_reaches_anthropic_as_written_but_for_the_model(world: World) -> None:
    sdk = client(world)
    sdk.messages.create(
        model=SONNET_ID, **ASKED, extra_body=ROUTING, extra_headers={"anthropic-beta": BETA}
    )
    [sent] = world.fake.requests(SONNET)
    assert sent["path"] == "/anthropic/v1/messages"
    assert sent["body"] == {**ASKED, "model": SONNET}
    headers = sent["headers"]
    assert (headers["x-api-key"], headers["anthropic-version"], headers["anthropic-beta"]) == (
        MOMOR_UPSTREAM_KEY,
        sdk.default_headers["anthropic-version"],  # the client's, forwarded
        BETA,
    )


def test_without_the_clients_version_anthropic_is_sent_momors(world: World) -> None:
    response = httpx.post(
        world.url + "/v1/messages",
        json={**ASKED, "model": SONNET_ID},
        headers={"authorization": f"Bearer {world.key}"},  # Claude Code's ANTHROPIC_AUTH_TOKEN
    )
    assert response.status_code == 200, response.text
    [sent] = world.fake.requests(SONNET)
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert "anthropic-beta" not in sent["headers"]


def test_the_answer_is_anthropics_with_momors_id(world: World) -> None:
    raw = client(world).messages.with_raw_response.create(model=SONNET_ID, **ASKED)
    request_id = raw.headers["x-momor-request-id"]
    answer = raw.http_response.json()
    written = direct(world, {**ASKED, "model": SONNET}).json()
    assert answer == {**written, "id": f"msg_{request_id}"}
    message = raw.parse()
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].signature == fake_signature("Paris, from the tool.")
    assert raw.headers["x-momor-provider"] == "anthropic"


def test_the_stream_is_anthropics_events_with_momors_id(world: World) -> None:
    response = post(world, {**ASKED, "model": SONNET_ID, "stream": True})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    request_id = response.headers["x-momor-request-id"]
    events = sse(response.text)
    written = sse(direct(world, {**ASKED, "model": SONNET, "stream": True}).text)
    written[0][1]["message"]["id"] = f"msg_{request_id}"
    assert events == written
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]


def test_the_sdk_streams_it_whole(world: World) -> None:
    with client(world).messages.stream(model=SONNET_ID, **ASKED) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "Paris."
    thinking = message.content[0]
    assert thinking.type == "thinking"
    assert thinking.signature == fake_signature("Paris, from the tool.")
    assert message.id.startswith("msg_") and len(message.id) == 36
    assert message.stop_reason == "end_turn"


def test_the_call_is_recorded_as_messages_and_billed_with_its_cache(world: World) -> None:
    usage = {
        "input_tokens": 50,
        "cache_read_input_tokens": 200,
        "cache_creation_input_tokens": 100,
        "output_tokens": 10,
    }
    world.fake.script(SONNET, text="Paris.", usage=usage)
    raw = client(world).messages.with_raw_response.create(model=SONNET_ID, **ASKED)
    assert raw.parse().usage.cache_read_input_tokens == 200
    request_id = raw.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.api, row.status, row.model, row.provider, row.streamed) == (
        "messages",
        "success",
        SONNET_ID,
        "anthropic",
        False,
    )
    assert (row.prompt_tokens, row.cached_tokens, row.cache_write_tokens) == (350, 200, 100)
    assert row.completion_tokens == 10
    # 50 fresh at $3, 200 read at $0.30, 100 written at $3.75, 10 out at $15, per million
    assert row.cost == Decimal("0.000735")
    assert row.finish_reason == "stop" and row.native_finish_reason == "end_turn"


def test_a_streamed_call_is_recorded_and_billed_on_anthropics_usage(world: World) -> None:
    world.fake.script(SONNET, text="Paris.", usage={"input_tokens": 40, "output_tokens": 8})
    response = post(world, {**ASKED, "model": SONNET_ID, "stream": True})
    assert response.status_code == 200, response.text
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.api, row.streamed, row.prompt_tokens, row.completion_tokens) == (
        "messages",
        True,
        40,
        8,
    )
    assert row.cost == Decimal(40 * 3 + 8 * 15) / 1_000_000


# Failover before output, across Anthropic and translated offerings


def test_an_anthropic_failure_moves_the_call_to_a_translated_offering(world: World) -> None:
    world.fake.script(OMNI_ON_ANTHROPIC, fail={"status": 529})
    raw = client(world).messages.with_raw_response.create(
        model=OMNI_ID, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    message = raw.parse()
    assert tried(world.fake) == [OMNI_ON_ANTHROPIC, OMNI_ON_OPENAI]
    assert raw.headers["x-momor-provider"] == "openai"
    assert (message.model, message.content[0].text) == (OMNI_ID, "Hello from the fake upstream.")
    assert message.id == "msg_" + raw.headers["x-momor-request-id"]


def test_an_error_event_before_output_moves_a_stream_on(world: World) -> None:
    world.fake.script(OMNI_ON_ANTHROPIC, stream_error_after=0)
    with client(world).messages.stream(
        model=OMNI_ID, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
    assert text == "Hello from the fake upstream."
    assert tried(world.fake) == [OMNI_ON_ANTHROPIC, OMNI_ON_OPENAI]


def test_a_translated_failure_moves_the_call_to_anthropic(world: World) -> None:
    world.fake.script(OMNI_ON_OPENAI, fail={"status": 503})
    message = client(world).messages.create(
        model=OMNI_ID,
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"provider": {"order": ["openai", "anthropic"]}},
    )
    assert tried(world.fake) == [OMNI_ON_OPENAI, OMNI_ON_ANTHROPIC]
    assert message.model == OMNI_ON_ANTHROPIC  # as Anthropic wrote it
    [sent] = world.fake.requests(OMNI_ON_ANTHROPIC)
    assert "provider" not in sent["body"]


def test_after_output_anthropics_error_is_one_error_event(world: World) -> None:
    world.fake.script(SONNET, text="one two three four", stream_error_after=2)
    response = post(world, {**ASKED, "model": SONNET_ID, "stream": True})
    assert response.status_code == 200, response.text
    events = sse(response.text)
    assert [name for name, _ in events].count("error") == 1
    assert events[-1] == (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    assert "message_stop" not in [name for name, _ in events]
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.status, row.finish_reason) == ("failed", "error")  # a broken stream's record


def test_the_sdk_raises_the_error_event(world: World) -> None:
    world.fake.script(SONNET, text="one two three four", stream_error_after=2)
    with (
        pytest.raises(anthropic.APIStatusError, match="overloaded_error"),
        client(world).messages.stream(model=SONNET_ID, **ASKED) as stream,
    ):
        for _ in stream:
            pass


def test_anthropics_refusal_of_the_body_is_the_answer(world: World) -> None:
    world.fake.script(SONNET, fail={"status": 400})
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(world).messages.create(model=SONNET_ID, **ASKED)
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "The fake upstream was scripted to fail with status 400.",
        },
    }
