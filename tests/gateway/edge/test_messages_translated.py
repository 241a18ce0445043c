"""POST /v1/messages served by an offering that speaks Chat Completions (OpenAI's gpt-5), over
HTTP with Anthropic's SDK as the client: the call translated on the way up, the answer and
the stream written back in Messages' shape (text, thinking, tool_use, stop reasons, usage with
cache reads), a tool loop carried both ways, one error event after output, the record kept as
a messages call and billed on the provider's usage."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from billing.models import Generation
from tests.gateway.calls import settled_world, wait_recorded  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.edge.messages_world import (
    GPT5_ID,
    claude,  # noqa: F401 - autouse
    client,
    post,
    sse,
)

WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CALL = {"id": "call_1", "name": "weather", "arguments": '{"city": "Paris"}'}
ASK: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]


def sent(world: World) -> dict[str, Any]:
    [request] = world.fake.requests("gpt-5")
    body: dict[str, Any] = request["body"]
    return body


def test_a_plain_call_is_translated_and_answered_as_a_message(world: World) -> None:
    world.fake.script("gpt-5", text="Bonjour.")
    raw = client(world).messages.with_raw_response.create(
        model=GPT5_ID,
        max_tokens=300,
        system="Be brief.",
        messages=[{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        stop_sequences=["END"],
        metadata={"user_id": "user-1"},
        extra_body={"temperature": 0.5},  # the SDK (2.x) types no sampling fields
    )
    body = sent(world)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]
    assert (body["model"], body["max_completion_tokens"], body["temperature"]) == (
        "gpt-5",
        300,
        0.5,
    )
    assert (body["stop"], body["user"]) == (["END"], "user-1")
    message = raw.parse()
    assert message.id == "msg_" + raw.headers["x-momor-request-id"]
    assert (message.type, message.role, message.model) == ("message", "assistant", GPT5_ID)
    assert [(b.type, b.text) for b in message.content] == [("text", "Bonjour.")]
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


def test_usage_with_cache_reads_in_anthropics_terms_and_billed(world: World) -> None:
    usage = {"prompt_tokens": 120, "prompt_tokens_details": {"cached_tokens": 100}}
    world.fake.script("gpt-5", text="Bonjour.", usage=usage)
    raw = client(world).messages.with_raw_response.create(
        model=GPT5_ID, max_tokens=100, messages=ASK
    )
    read = raw.parse().usage
    assert (read.input_tokens, read.cache_read_input_tokens) == (20, 100)
    assert (read.cache_creation_input_tokens, read.output_tokens) == (0, 1)
    request_id = raw.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.api, row.status, row.model, row.provider) == (
        "messages",
        "success",
        GPT5_ID,
        "openai",
    )
    assert (row.prompt_tokens, row.cached_tokens, row.completion_tokens) == (120, 100, 1)
    # 20 fresh and 100 cached at $1.25 (no cache price: the prompt's), 1 out at $10, per million
    assert row.cost == Decimal(120 * 125 // 100 + 10) / 1_000_000


def test_the_messages_id_finds_its_record(world: World) -> None:
    message = client(world).messages.create(model=GPT5_ID, max_tokens=100, messages=ASK)
    wait_recorded(message.id.removeprefix("msg_"))
    found = httpx.get(
        world.url + "/v1/generation",
        params={"id": message.id},
        headers={"authorization": f"Bearer {world.key}"},
    )
    assert found.status_code == 200, found.text
    assert (found.json()["data"]["api"], found.json()["data"]["model"]) == ("messages", GPT5_ID)


@pytest.mark.parametrize(
    ("finish", "stop"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
def test_stop_reasons(world: World, finish: str, stop: str) -> None:
    world.fake.script("gpt-5", text="Cut", finish_reason=finish)
    message = client(world).messages.create(model=GPT5_ID, max_tokens=100, messages=ASK)
    assert message.stop_reason == stop


def test_a_tool_loop_both_ways(world: World) -> None:
    world.fake.script("gpt-5", tool_calls=[CALL])
    sdk = client(world)
    first = sdk.messages.create(
        model=GPT5_ID,
        max_tokens=100,
        messages=ASK,
        tools=[WEATHER],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
    )
    assert first.stop_reason == "tool_use"
    [use] = first.content
    assert use.type == "tool_use"
    assert (use.id, use.name, use.input) == ("call_1", "weather", {"city": "Paris"})
    up = sent(world)
    assert up["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "parameters": WEATHER["input_schema"],
                "description": "The weather in a city.",
            },
        }
    ]
    assert (up["tool_choice"], up["parallel_tool_calls"]) == ("required", False)

    world.fake.reset()
    world.fake.script("gpt-5", text="Sunny.")
    result = {"type": "tool_result", "tool_use_id": "call_1", "content": "22C, sunny"}
    second = sdk.messages.create(
        model=GPT5_ID,
        max_tokens=100,
        tools=[WEATHER],
        messages=[
            *ASK,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [result]},
        ],
    )
    assert second.content[0].text == "Sunny."
    assert sent(world)["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "22C, sunny"},
    ]


def test_thinking_asks_reasoning(world: World) -> None:
    client(world).messages.create(
        model=GPT5_ID,
        max_tokens=20000,
        messages=ASK,
        thinking={"type": "enabled", "budget_tokens": 16384},
    )
    assert sent(world)["reasoning_effort"] == "high"  # a 16k budget stands for high


# Streams


def test_a_stream_of_thinking_text_and_a_tool_call(world: World) -> None:
    world.fake.script("gpt-5", reasoning="Let me see.", text="Checking.", tool_calls=[CALL])
    with client(world).messages.stream(
        model=GPT5_ID, max_tokens=100, messages=ASK, tools=[WEATHER]
    ) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    thinking, text, use = message.content
    assert (thinking.thinking, text.text) == ("Let me see.", "Checking.")
    assert (use.id, use.name, use.input) == ("call_1", "weather", {"city": "Paris"})
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens > 0 and message.usage.input_tokens > 0
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert sent(world)["stream_options"] == {"include_usage": True}


def test_the_stream_as_anthropics_events(world: World) -> None:
    world.fake.script("gpt-5", text="Hi there")
    response = post(world, {"model": GPT5_ID, "max_tokens": 100, "messages": ASK, "stream": True})
    assert response.status_code == 200, response.text
    events = sse(response.text)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["id"] == "msg_" + response.headers["x-momor-request-id"]
    assert events[-2][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.api, row.streamed, row.status) == ("messages", True, "success")


def test_after_output_a_broken_stream_ends_on_one_error_event(world: World) -> None:
    world.fake.script("gpt-5", text="one two three four", stream_error_after=2)
    response = post(world, {"model": GPT5_ID, "max_tokens": 100, "messages": ASK, "stream": True})
    events = sse(response.text)
    names = [name for name, _ in events]
    assert names.count("error") == 1 and names[-1] == "error"
    assert "message_stop" not in names
    assert events[-1][1]["type"] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"
    with (
        pytest.raises(anthropic.APIStatusError, match="api_error"),
        client(world).messages.stream(model=GPT5_ID, max_tokens=100, messages=ASK) as stream,
    ):
        for _ in stream:
            pass
