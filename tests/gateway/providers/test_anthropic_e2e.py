"""Anthropic end to end: calls over real HTTP through Momor to the fake upstream's Messages API,
asserting what the client gets and the exact body Anthropic receives; and the fake itself held
to the official anthropic SDK (it takes the SDK's requests, the SDK reads its answers) and to
the API's refusals."""

from __future__ import annotations

import time
from datetime import date
from typing import Any

import anthropic
import httpx
import orjson
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.catalog.snapshot import catalog_build, catalog_fingerprint
from gateway.catalog.state import STATE
from gateway.models import Provider
from testkit.fake_anthropic import fake_signature
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World, model, offer, provider

SONNET = "claude-sonnet-4-5-20250929"
OMNI = "claude-omni-1"
OMNI_ON_OPENAI = "gpt-omni"
ASK = [{"role": "user", "content": "What is the capital of France?"}]
SENT_ASK = [{"role": "user", "content": [{"type": "text", "text": ASK[0]["content"]}]}]
WEATHER = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
SENT_TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
CALL = {"id": "toolu_01", "name": "get_weather", "arguments": '{"city": "Paris"}'}
DEFAULT_USAGE = {
    "prompt_tokens": 6,
    "completion_tokens": 5,
    "total_tokens": 11,
    "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}
PIECES = ["Hello", " from", " the", " fake", " upstream."]


def sonnet_usage(prompt: int, completion: int = 5) -> dict[str, Any]:
    """The usage Momor answers with for Sonnet (3 and 15 USD per million) on Momor's key."""
    prompt_cost, completion_cost = round(prompt * 3e-6, 9), round(completion * 15e-6, 9)
    cost = round(prompt_cost + completion_cost, 9)
    return {
        **DEFAULT_USAGE,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cost": cost,
        "cost_details": {
            "upstream_inference_cost": cost,
            "upstream_inference_prompt_cost": prompt_cost,
            "upstream_inference_completions_cost": completion_cost,
        },
        "token_count_basis": "provider_native",
        "native_tokens": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
    }


def add_anthropic(world: World) -> None:
    """Anthropic on the fake: Claude Sonnet (thinking by budget), and acme/omni served by
    Anthropic (the cheaper, so tried first) and by OpenAI."""
    claude = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    sonnet = model("anthropic/claude-sonnet-4-5", released=date(2025, 9, 29))
    offer(
        sonnet,
        claude,
        SONNET,
        "3",
        "15",
        tools=True,
        json_schema=True,
        reasoning_efforts=["low", "medium", "high"],
        input_modalities=["image", "file"],
    )
    omni = model("acme/omni")
    # The catalog claims audio for Anthropic here: its API carries none, so routing leaves
    # it out of a call with audio.
    everything = ["image", "file", "audio"]
    offer(omni, claude, OMNI, "1", "5", tools=True, input_modalities=everything)
    openai = Provider.objects.get(name="openai")
    offer(omni, openai, OMNI_ON_OPENAI, "2", "8", tools=True, input_modalities=everything)


@pytest.fixture
def claude(world: World) -> World:
    add_anthropic(world)
    settle()
    return world


def settle() -> None:
    """Bring the running gateway's catalog up to the database: its refresher may have built
    one while the rows were being written (a build already under way lands a moment later,
    so look twice)."""
    for _ in range(3):
        STATE.catalog = catalog_build()
        time.sleep(0.03)
        if STATE.catalog is not None and STATE.catalog.fingerprint == catalog_fingerprint():
            return


def events(response: httpx.Response) -> list[Any]:
    """The `data:` payloads of a whole SSE answer."""
    assert response.status_code == 200, response.text
    blocks = response.text.removesuffix("\n\n").split("\n\n")
    assert all(block.startswith("data: ") for block in blocks)
    data = [block.removeprefix("data: ") for block in blocks]
    return [d if d == "[DONE]" else orjson.loads(d) for d in data]


def chunk(first: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> Any:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**envelope(first), "choices": [choice]}


def envelope(first: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": first["id"],
        "object": "chat.completion.chunk",
        "created": first["created"],
        "model": first["model"],
        "provider": "Anthropic",
    }


def assembled(chunks: list[Any]) -> dict[str, Any]:
    """The assistant message a client builds from a stream's deltas."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    for item in chunks[:-1]:  # the last is [DONE]
        for choice in item.get("choices") or ():
            delta = choice["delta"]
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            if delta.get("reasoning"):
                message["reasoning"] = message.get("reasoning", "") + delta["reasoning"]
            message.setdefault("reasoning_details", []).extend(delta.get("reasoning_details", ()))
            for call in delta.get("tool_calls", ()):
                found = calls.setdefault(call["index"], {"type": "function"})
                found.update({k: v for k, v in call.items() if k in ("id", "type")})
                function = found.setdefault("function", {"name": "", "arguments": ""})
                function["name"] += call["function"].get("name") or ""
                function["arguments"] += call["function"].get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def sent(world: World, upstream_id: str) -> list[Any]:
    return [r["body"] for r in world.fake.requests(upstream_id)]


def attempts(request_id: str) -> list[tuple[str, int | None, str]]:
    drain()
    generation = Generation.objects.get(request_id=request_id)
    return [(a.provider, a.http_status, a.error) for a in generation.attempts.all()]


# Plain and streamed answers


def test_it_answers_a_plain_call_from_anthropic(claude: World) -> None:
    response = claude.post(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "messages": [{"role": "system", "content": "Be brief."}, *ASK],
            "max_tokens": 100,
            "temperature": 0.5,
            "user": "alice",
            "seed": 7,
        }
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body == {
        "id": response.headers["x-momor-request-id"],
        "object": "chat.completion",
        "created": body["created"],
        "model": "anthropic/claude-sonnet-4-5",
        "provider": "Anthropic",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello from the fake upstream."},
                "logprobs": None,
                "finish_reason": "stop",
                "native_finish_reason": "end_turn",
            }
        ],
        "usage": sonnet_usage(8),
    }
    [call] = claude.fake.requests(SONNET)
    assert call["path"] == "/anthropic/v1/messages"
    assert call["headers"]["x-api-key"] == MOMOR_UPSTREAM_KEY
    assert call["headers"]["anthropic-version"] == "2023-06-01"
    assert call["body"] == {
        "model": SONNET,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": SENT_ASK,
        "max_tokens": 100,
        "temperature": 0.5,
        "metadata": {"user_id": "alice"},
    }


def test_it_streams_an_anthropic_answer(claude: World) -> None:
    response = claude.stream(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "messages": ASK,
            "stream_options": {"include_usage": True},
        }
    )

    chunks = events(response)
    first = chunks[0]
    assert first["id"] == response.headers["x-momor-request-id"]
    assert first["created"] > 0
    assert response.headers["x-momor-provider"] == "anthropic"
    assert chunks == [
        chunk(first, {"role": "assistant", "content": ""}),
        *(chunk(first, {"content": piece}) for piece in PIECES),
        chunk(first, {}, "stop"),
        {**envelope(first), "choices": [], "usage": sonnet_usage(6)},
        "[DONE]",
    ]
    assert sent(claude, SONNET) == [
        {"model": SONNET, "messages": SENT_ASK, "max_tokens": 4096, "stream": True}
    ]


def test_a_stream_without_include_usage_gets_no_usage_chunk(claude: World) -> None:
    chunks = events(claude.stream({"model": "anthropic/claude-sonnet-4-5", "messages": ASK}))

    assert chunks[-2] == chunk(chunks[0], {}, "stop")
    assert chunks[-1] == "[DONE]"


# Tool calls and reasoning, there and back


def test_a_tool_call_round_trip(claude: World) -> None:
    claude.fake.script(SONNET, tool_calls=[CALL])
    first = claude.post(
        {"model": "anthropic/claude-sonnet-4-5", "messages": WEATHER, "tools": TOOLS}
    )

    assistant = first.json()["choices"][0]["message"]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "toolu_01",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    assert first.json()["choices"][0]["finish_reason"] == "tool_calls"

    claude.fake.script(SONNET, text="18C and rain.")
    result = {"role": "tool", "tool_call_id": "toolu_01", "content": "18C, rain"}
    second = claude.post(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "messages": [*WEATHER, assistant, result],
            "tools": TOOLS,
            "tool_choice": "auto",
        }
    )

    assert second.status_code == 200, second.text
    assert second.json()["choices"][0]["message"]["content"] == "18C and rain."
    assert sent(claude, SONNET)[1] == {
        "model": SONNET,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": WEATHER[0]["content"]}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C, rain"}
                ],
            },
        ],
        "max_tokens": 4096,
        "tools": SENT_TOOLS,
        "tool_choice": {"type": "auto"},
    }


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_reasoning_round_trip_replays_the_signed_thinking(claude: World, streamed: bool) -> None:
    thought = "The user wants the weather; I should call the tool."
    claude.fake.script(SONNET, reasoning=thought, tool_calls=[CALL])
    ask = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": WEATHER,
        "tools": TOOLS,
        "reasoning_effort": "high",
    }
    if streamed:
        assistant = assembled(events(claude.stream(ask)))
    else:
        assistant = claude.post(ask).json()["choices"][0]["message"]

    signature = {"anthropic.signature": fake_signature(thought)}
    detail = {"type": "reasoning.text", "text": thought, "data": signature}
    assert assistant["reasoning"] == thought
    assert assistant["reasoning_details"] == [detail]
    assert sent(claude, SONNET)[0]["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert sent(claude, SONNET)[0]["max_tokens"] == 20480

    claude.fake.script(SONNET, text="18C and rain.")
    result = {"role": "tool", "tool_call_id": "toolu_01", "content": "18C, rain"}
    second = claude.post({**ask, "messages": [*WEATHER, assistant, result]})

    assert second.status_code == 200, second.text
    assert sent(claude, SONNET)[1]["messages"][1]["content"] == [
        {"type": "thinking", "thinking": thought, "signature": fake_signature(thought)},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
    ]


def test_redacted_thinking_comes_back_encrypted_and_is_replayed(claude: World) -> None:
    claude.fake.script(
        SONNET, reasoning="EmwKAhgBEgy3va3p", reasoning_field="redacted_thinking", tool_calls=[CALL]
    )
    ask = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": WEATHER,
        "tools": TOOLS,
        "reasoning_effort": "low",
    }
    assistant = assembled(events(claude.stream(ask)))

    redacted = {"type": "reasoning.encrypted", "data": {"anthropic.redacted": "EmwKAhgBEgy3va3p"}}
    assert assistant["reasoning_details"] == [redacted]
    assert "reasoning" not in assistant

    claude.fake.script(SONNET, text="18C and rain.")
    result = {"role": "tool", "tool_call_id": "toolu_01", "content": "18C, rain"}
    second = claude.post({**ask, "messages": [*WEATHER, assistant, result]})

    assert second.status_code == 200, second.text
    assert sent(claude, SONNET)[1]["messages"][1]["content"][0] == {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3p",
    }


def test_a_tool_loop_sent_back_without_its_thinking_is_anthropics_to_refuse(
    claude: World,
) -> None:
    function = {"name": "get_weather", "arguments": "{}"}
    call = {"id": "toolu_01", "type": "function", "function": function}
    assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "toolu_01", "content": "18C, rain"}

    response = claude.post(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "messages": [*WEATHER, assistant, result],
            "tools": TOOLS,
            "reasoning_effort": "low",
        }
    )

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert response.json()["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`"
    )


# Moving on, and failures


def test_input_audio_moves_past_anthropic_to_the_next_candidate(claude: World) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    content = [{"type": "text", "text": "What is said?"}, audio]

    response = claude.post(
        {"model": "acme/omni", "messages": [{"role": "user", "content": content}]}
    )

    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    assert response.json()["choices"][0]["message"]["content"] == "Hello from the fake upstream."
    assert sent(claude, OMNI) == []
    assert sent(claude, OMNI_ON_OPENAI)[0]["messages"][0]["content"] == content
    assert attempts(response.headers["x-momor-request-id"]) == [("openai", 200, "")]


@pytest.mark.parametrize("status", [529, 429])
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_overloaded_and_rate_limited_anthropic_fails_over(
    claude: World, status: int, streamed: bool
) -> None:
    claude.fake.script(OMNI, fail={"status": status})
    body = {"model": "acme/omni", "messages": ASK}

    response = claude.stream(body) if streamed else claude.post(body)

    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    message = f"The fake upstream was scripted to fail with status {status}."
    assert attempts(response.headers["x-momor-request-id"]) == [
        ("anthropic", status, message),
        ("openai", 200, ""),
    ]


def test_a_request_anthropic_rejects_is_returned_as_openais_error_object(claude: World) -> None:
    claude.fake.script(OMNI, fail={"status": 400})

    response = claude.post({"model": "acme/omni", "messages": ASK})

    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "The fake upstream was scripted to fail with status 400.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    assert sent(claude, OMNI_ON_OPENAI) == []


def test_an_empty_turn_is_anthropics_to_refuse_and_is_not_tried_elsewhere(claude: World) -> None:
    messages = [*ASK, {"role": "assistant", "content": ""}, {"role": "user", "content": "Well?"}]

    response = claude.post({"model": "acme/omni", "messages": messages})

    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "messages.1: all messages must have non-empty content except for the "
        "optional final assistant message",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    assert sent(claude, OMNI_ON_OPENAI) == []


def test_an_error_event_after_output_ends_the_stream_on_an_error_chunk(claude: World) -> None:
    claude.fake.script(SONNET, stream_error_after=2)

    chunks = events(claude.stream({"model": "anthropic/claude-sonnet-4-5", "messages": ASK}))

    first = chunks[0]
    assert chunks == [
        chunk(first, {"role": "assistant", "content": ""}),
        chunk(first, {"content": "Hello"}),
        chunk(first, {"content": " from"}),
        {
            **envelope(first),
            "error": {"code": 529, "message": "Overloaded"},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
        },
    ]
    assert attempts(first["id"]) == [("anthropic", 529, "Overloaded")]


# The fake, held to the official SDK


def sdk(fake: FakeUpstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url + "/anthropic", api_key="x", max_retries=0)


def test_the_fake_takes_the_sdks_request_and_the_sdk_reads_its_answer(fake: FakeUpstream) -> None:
    fake.script("claude-x", reasoning="Think.", text="Paris.", usage={"cache_read_input_tokens": 3})

    message = sdk(fake).messages.create(
        model="claude-x",
        max_tokens=2048,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        tools=[{"name": "get_weather", "input_schema": {"type": "object"}, "strict": True}],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        output_config={"effort": "high"},
        metadata={"user_id": "alice"},
        stop_sequences=["END"],
        service_tier="auto",
    )

    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].to_dict() == {
        "type": "thinking",
        "thinking": "Think.",
        "signature": fake_signature("Think."),
    }
    assert message.stop_reason == "end_turn"
    assert message.usage.cache_read_input_tokens == 3


def test_the_sdks_stream_helper_reads_the_fakes_stream(fake: FakeUpstream) -> None:
    fake.script("claude-x", reasoning="Look it up.", tool_calls=[CALL])

    with sdk(fake).messages.stream(
        model="claude-x",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
    ) as stream:
        final = stream.get_final_message()

    assert [block.to_dict() for block in final.content] == [
        {"type": "thinking", "thinking": "Look it up.", "signature": fake_signature("Look it up.")},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert final.stop_reason == "tool_use"


def refusal(fake: FakeUpstream, body: dict[str, Any], **headers: str) -> Any:
    sent_headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", **headers}
    response = httpx.post(
        fake.url + "/anthropic/v1/messages", json=body, headers=sent_headers, trust_env=False
    )
    assert response.status_code in (400, 401), response.text
    assert response.json()["type"] == "error"
    return response.json()["error"]


VALID = {"model": "claude-x", "max_tokens": 100, "messages": SENT_ASK}
USE = {"type": "tool_use", "id": "toolu_01", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "ok"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**VALID, "max_tokens": None}, "max_tokens: Input should be a valid integer"),
        ({k: v for k, v in VALID.items() if k != "max_tokens"}, "max_tokens: Field required"),
        ({**VALID, "seed": 1}, "seed: Extra inputs are not permitted"),
        (
            {**VALID, "messages": [{"role": "system", "content": "x"}, *SENT_ASK]},
            'messages: Unexpected role "system".',
        ),
        (
            {**VALID, "messages": [*SENT_ASK, *SENT_ASK]},
            'messages: roles must alternate between "user" and "assistant"',
        ),
        (
            {**VALID, "messages": [{"role": "user", "content": [{"type": "bogus"}]}]},
            "messages.0.content.0",
        ),
        (
            {
                **VALID,
                "messages": [
                    *SENT_ASK,
                    {"role": "assistant", "content": [USE]},
                    {"role": "user", "content": [{"type": "text", "text": "x"}]},
                ],
            },
            "messages.2: `tool_use` ids were found without `tool_result` blocks",
        ),
        (
            {**VALID, "messages": [{"role": "user", "content": [RESULT]}]},
            "messages.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01.",
        ),
        (
            {**VALID, "thinking": {"type": "enabled", "budget_tokens": 1024}},
            "`max_tokens` must be greater than `thinking.budget_tokens`.",
        ),
        (
            {**VALID, "max_tokens": 5000, "thinking": {"type": "enabled", "budget_tokens": 500}},
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            {
                **VALID,
                "messages": [
                    *SENT_ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "thinking", "thinking": "x", "signature": "forged"}],
                    },
                ],
            },
            "messages.1.content.0: Invalid `signature` in `thinking` block",
        ),
    ],
)
def test_the_fake_refuses_what_the_api_refuses(
    fake: FakeUpstream, body: dict[str, Any], message: str
) -> None:
    error = refusal(fake, body)

    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(message), error["message"]


def test_the_fake_refuses_a_call_without_a_key_or_version(fake: FakeUpstream) -> None:
    assert refusal(fake, VALID, **{"x-api-key": ""})["type"] == "authentication_error"
    assert refusal(fake, VALID, **{"anthropic-version": ""})["message"] == (
        "anthropic-version: header is required"
    )
