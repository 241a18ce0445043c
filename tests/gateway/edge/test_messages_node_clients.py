"""POST /v1/messages with the npm clients as they are used, run by Node.js against the live
gateway and the fake upstream: Anthropic's TypeScript SDK (@anthropic-ai/sdk,
tests/clients/anthropic_sdk.mjs) and the Vercel AI SDK's Anthropic provider (ai and
@ai-sdk/anthropic, tests/clients/ai_sdk.mjs), each on an Anthropic offering (native) and an
OpenAI one (translated).

Anthropic's SDK: messages.create and messages.stream (its text events and final message), a tool
round trip, countTokens, the error class it raises for each of Momor's refusals, and the error
event that ends a stream after output. The AI SDK: generateText and streamText (text and usage),
and a tool executed between two steps, its result reaching the upstream's second call."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import make_key, make_org
from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World
from tests.gateway.edge.messages_world import (
    GPT5_ID,
    SONNET,
    SONNET_ID,
    claude,  # noqa: F401 - autouse
)
from tests.gateway.edge.test_messages_count import estimate
from tests.node_clients import run_script
from tests.rate_window import fresh_rate_window


@dataclass(frozen=True)
class Offering:
    model: str
    """Momor's id of the model the client asks for."""
    upstream: str
    path: str
    """Where the fake upstream is called."""
    usage: dict[str, Any]
    """The provider's usage, in its own keys, for 12 prompt tokens (3 read from the cache) and 7
    completion tokens."""
    answered_as: str
    """The model an answer names: Anthropic's id natively, Momor's translated."""
    tool_result: dict[str, Any]
    """The message the weather tool's result reaches the upstream in."""
    broken_stream: dict[str, str]
    """The error event a stream broken after output ends on: Anthropic's own natively, Momor's
    of the type its status stands for translated."""


NATIVE = Offering(
    SONNET_ID,
    SONNET,
    "/anthropic/v1/messages",
    {"input_tokens": 9, "cache_read_input_tokens": 3, "output_tokens": 7},
    SONNET,
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "22C, sunny"}],
    },
    {"type": "overloaded_error", "message": "Overloaded"},
)
TRANSLATED = Offering(
    GPT5_ID,
    "gpt-5",
    "/v1/chat/completions",
    {"prompt_tokens": 12, "prompt_tokens_details": {"cached_tokens": 3}, "completion_tokens": 7},
    GPT5_ID,
    {"role": "tool", "tool_call_id": "call_1", "content": "22C, sunny"},
    {
        "type": "api_error",
        "message": "The server had an error while processing your request. Sorry about that!",
    },
)
OFFERINGS = pytest.mark.parametrize("offering", [NATIVE, TRANSLATED], ids=["native", "translated"])

ANSWER = "Paris is the capital."
ASK: list[Any] = [{"role": "user", "content": "What is the capital of France?"}]
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": WEATHER_SCHEMA,
}
CALL = {"id": "call_1", "name": "weather", "arguments": '{"city": "Paris"}'}
TOOL_USE = {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}}
SUNNY = "Sunny in Paris."


def anthropic_sdk(world: World, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step's outcome with Anthropic's TypeScript SDK pointed at Momor."""
    outcomes: list[dict[str, Any]] = run_script(
        "anthropic_sdk.mjs", {"baseURL": world.url, "apiKey": world.key, "steps": steps}
    )
    return outcomes


def ai_sdk(world: World, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step's outcome with the AI SDK's Anthropic provider pointed at Momor."""
    inputs = {"baseURL": world.url + "/v1", "apiKey": world.key, "steps": steps}
    outcomes: list[dict[str, Any]] = run_script("ai_sdk.mjs", inputs)
    return outcomes


def upstream_bodies(world: World, offering: Offering) -> list[dict[str, Any]]:
    """The bodies the offering was sent, after checking each went where its API is spoken."""
    calls = world.fake.requests(offering.upstream)
    assert [call["path"] for call in calls] == [offering.path] * len(calls)
    return [call["body"] for call in calls]


def messages_usage(usage: dict[str, Any]) -> tuple[int, int, int, int]:
    return (
        usage["input_tokens"],
        usage["cache_read_input_tokens"],
        usage["cache_creation_input_tokens"],
        usage["output_tokens"],
    )


# Anthropic's TypeScript SDK


@OFFERINGS
def test_anthropic_sdk_creates_and_streams(world: World, offering: Offering) -> None:
    world.fake.script(offering.upstream, text=ANSWER, usage=offering.usage)
    ask = {"model": offering.model, "max_tokens": 200, "messages": ASK}
    created, streamed = anthropic_sdk(
        world, {"op": "create", "params": ask}, {"op": "stream", "params": ask}
    )
    for outcome in (created, streamed):
        message = outcome["message"]
        assert message["id"] == "msg_" + outcome["request_id"]
        assert (message["type"], message["role"]) == ("message", "assistant")
        assert message["model"] == offering.answered_as
        assert message["content"] == [{"type": "text", "text": ANSWER}]
        assert (message["stop_reason"], message["stop_sequence"]) == ("end_turn", None)
        assert messages_usage(message["usage"]) == (9, 3, 0, 7)
    assert streamed["texts"] == ["Paris", " is", " the", " capital."]
    assert streamed["events"] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 4,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    plain, stream = upstream_bodies(world, offering)
    assert stream["stream"] is True
    headers = world.fake.requests(offering.upstream)[0]["headers"]
    if offering is NATIVE:
        assert plain == {"model": SONNET, "max_tokens": 200, "messages": ASK}
        assert headers["x-api-key"] == MOMOR_UPSTREAM_KEY
    else:
        assert (plain["messages"], plain["max_completion_tokens"]) == (ASK, 200)
        assert headers["authorization"] == f"Bearer {MOMOR_UPSTREAM_KEY}"


@OFFERINGS
def test_anthropic_sdk_round_trips_a_tool(world: World, offering: Offering) -> None:
    world.fake.script(offering.upstream, tool_calls=[CALL], text=SUNNY, tool_round_trip=True)
    loop = {
        "op": "tool_loop",
        "params": {"model": offering.model, "max_tokens": 200, "messages": ASK, "tools": [WEATHER]},
        "results": {"weather": "22C, sunny"},
    }
    created, streamed = anthropic_sdk(world, loop, {**loop, "stream": True})
    for outcome in (created, streamed):
        asked, answered = outcome["replies"]
        assert (asked["content"], asked["stop_reason"]) == ([TOOL_USE], "tool_use")
        assert answered["content"] == [{"type": "text", "text": SUNNY}]
        assert answered["stop_reason"] == "end_turn"
    bodies = upstream_bodies(world, offering)
    assert len(bodies) == 4
    for first, second in (bodies[:2], bodies[2:]):
        assert first["messages"] == ASK
        assert second["messages"][0] == ASK[0]
        assert second["messages"][-1] == offering.tool_result


def test_anthropic_sdk_counts_tokens(world: World) -> None:
    count = {"model": SONNET_ID, "system": "Be brief.", "messages": ASK}
    native, translated = anthropic_sdk(
        world,
        {"op": "count", "params": count},
        {"op": "count", "params": {**count, "model": GPT5_ID}},
    )
    assert native == {"input_tokens": 6 + 2}  # the fake counts words: the message's, the system's
    [sent] = world.fake.requests(SONNET)
    assert sent["path"] == "/anthropic/v1/messages/count_tokens"
    assert sent["body"] == {**count, "model": SONNET}
    system = {"role": "system", "content": "Be brief."}
    assert translated == {"input_tokens": estimate({"messages": [system, *ASK]})}


def test_anthropic_sdk_raises_its_error_class_for_each_refusal(world: World) -> None:
    world.fake.script(SONNET, fail={"status": 529})  # Sonnet's one offering overloaded
    poor, _ = make_key(make_org("poor", credits=Decimal("0.000001")), name="poor")
    fresh_rate_window(margin=30)
    slow, _ = make_key(world.org, name="slow", rate_limit=1)
    ask = {"model": GPT5_ID, "max_tokens": 100, "messages": ASK}
    outcomes = anthropic_sdk(
        world,
        {"op": "create", "params": ask, "apiKey": "sk-momor-not-a-key"},
        {"op": "create", "params": {**ask, "model": "nobody/nothing"}},
        {"op": "create", "params": {**ask, "max_tokens": 0}},
        {"op": "create", "params": ask, "apiKey": poor},
        {"op": "create", "params": ask, "apiKey": slow},
        {"op": "create", "params": ask, "apiKey": slow},
        {"op": "create", "params": {**ask, "model": SONNET_ID}},
    )
    bad_key, unknown, bad_body, no_credits, allowed, limited, overloaded = outcomes
    assert allowed["message"]["content"] == [
        {"type": "text", "text": "Hello from the fake upstream."}
    ]
    raised = {
        name: (error["name"], error["status"], error["type"])
        for name, error in [
            ("bad key", bad_key["error"]),
            ("unknown model", unknown["error"]),
            ("bad body", bad_body["error"]),
            ("no credits", no_credits["error"]),
            ("rate limit", limited["error"]),
            ("overloaded", overloaded["error"]),
        ]
    }
    assert raised == {
        "bad key": ("AuthenticationError", 401, "authentication_error"),
        "unknown model": ("NotFoundError", 404, "not_found_error"),
        "bad body": ("BadRequestError", 400, "invalid_request_error"),
        "no credits": ("PaymentRequiredError", 402, "billing_error"),
        "rate limit": ("RateLimitError", 429, "rate_limit_error"),
        "overloaded": ("OverloadedError", 529, "overloaded_error"),
    }
    assert "InternalServerError" in overloaded["error"]["classes"]  # the SDK's 5xx family
    assert unknown["error"]["message"] == "No configured model answers to nobody/nothing."
    assert bad_body["error"]["message"] == (
        "max_tokens: Input should be a whole number greater than or equal to 1"
    )
    assert no_credits["error"]["message"].startswith("Insufficient credits")
    assert int(limited["error"]["retry_after"]) >= 1
    for refused in (bad_key, unknown, bad_body, no_credits, limited, overloaded):
        assert len(refused["error"]["request_id"]) == 32
    assert [call["model"] for call in world.fake.requests()] == ["gpt-5", SONNET]


@OFFERINGS
def test_anthropic_sdk_stream_raises_the_error_event_after_output(
    world: World, offering: Offering
) -> None:
    world.fake.script(offering.upstream, text="one two three four", stream_error_after=2)
    [broken] = anthropic_sdk(
        world,
        {"op": "stream", "params": {"model": offering.model, "max_tokens": 100, "messages": ASK}},
    )
    assert broken["texts"] == ["one", " two"]
    assert broken["events"][-1] == "content_block_delta"
    assert "message_stop" not in broken["events"]
    error = broken["error"]
    assert (error["name"], error["status"]) == ("APIError", None)  # an event: no status of its own
    assert error["body"] == {"type": "error", "error": offering.broken_stream}
    assert (error["type"], error["message"]) == (
        offering.broken_stream["type"],
        offering.broken_stream["message"],
    )


# The Vercel AI SDK's Anthropic provider


@OFFERINGS
def test_ai_sdk_generates_and_streams_text(world: World, offering: Offering) -> None:
    world.fake.script(offering.upstream, text=ANSWER, usage=offering.usage)
    prompt = "What is the capital of France?"
    generated, streamed = ai_sdk(
        world,
        {"op": "generate", "model": offering.model, "prompt": prompt},
        {"op": "stream", "model": offering.model, "prompt": prompt},
    )
    assert streamed["deltas"] == ["Paris", " is", " the", " capital."]
    for outcome in (generated, streamed):
        assert (outcome["text"], outcome["finishReason"]) == (ANSWER, "stop")
        assert outcome["responseId"] == "msg_" + outcome["requestId"]
        assert outcome["modelId"] == offering.answered_as
        usage = outcome["usage"]
        assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (12, 7, 19)
        assert usage["inputTokenDetails"] == {
            "noCacheTokens": 9,
            "cacheReadTokens": 3,
            "cacheWriteTokens": 0,
        }
    for body in upstream_bodies(world, offering):
        [asked] = body["messages"]
        assert asked["role"] == "user"
        assert asked["content"] in (prompt, [{"type": "text", "text": prompt}])


@OFFERINGS
def test_ai_sdk_executes_a_tool_between_two_steps(world: World, offering: Offering) -> None:
    world.fake.script(offering.upstream, tool_calls=[CALL], text=SUNNY, tool_round_trip=True)
    step = {
        "model": offering.model,
        "prompt": "Weather in Paris?",
        "tools": {
            "weather": {"description": WEATHER["description"], "inputSchema": WEATHER_SCHEMA}
        },
        "results": {"weather": "22C, sunny"},
    }
    generated, streamed = ai_sdk(world, {**step, "op": "tools"}, {**step, "op": "stream_tools"})
    for outcome in (generated, streamed):
        assert outcome["executed"] == [{"name": "weather", "input": {"city": "Paris"}}]
        called, answered = outcome["steps"]
        assert called["finishReason"] == "tool-calls"
        assert called["toolCalls"] == [
            {"toolCallId": "call_1", "toolName": "weather", "input": {"city": "Paris"}}
        ]
        assert called["toolResults"] == [
            {"toolCallId": "call_1", "toolName": "weather", "output": "22C, sunny"}
        ]
        assert (answered["text"], answered["finishReason"]) == (SUNNY, "stop")
        assert (outcome["text"], outcome["finishReason"]) == (SUNNY, "stop")
    bodies = upstream_bodies(world, offering)
    assert len(bodies) == 4
    for first, second in (bodies[:2], bodies[2:]):
        assert len(first["messages"]) == 1
        assert second["messages"][-1] == offering.tool_result
