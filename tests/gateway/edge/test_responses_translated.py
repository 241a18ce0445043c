"""POST /v1/responses on an offering that speaks Chat Completions alone (Mistral), over HTTP with
OpenAI's SDK as the client against the fake upstream: the call translated (instructions, input
items, a function call's round trip, json_schema, max_output_tokens), the answer a Response,
the stream the real `response.*` event sequence with usage, a stream broken after output
ended on `error` and `response.failed`, the record api `responses` at its exact cost."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import openai
import pytest

from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.edge.test_responses import PATH, TEXT, client, record, record_of, streamed

MODEL = "mistral/mistral-small"
UPSTREAM = "mistral-small-latest"


def sent(world: World) -> dict[str, Any]:
    calls = world.fake.requests(UPSTREAM)
    assert len(calls) == 1, calls
    assert calls[0]["path"] == "/mistral/v1/chat/completions"
    body: dict[str, Any] = calls[0]["body"]
    return body


def test_a_call_is_sent_as_chat_completions_and_answered_as_a_response(world: World) -> None:
    world.fake.script(UPSTREAM, text="Bonjour.", usage={"prompt_tokens": 11})
    raw = client(world).responses.with_raw_response.create(
        model=MODEL,
        instructions="Answer in French.",
        input="Hello",
        max_output_tokens=50,
        temperature=0.2,
        reasoning={"summary": "auto"},
    )
    answer = raw.parse()
    assert answer.id == "resp_" + raw.headers["x-momor-request-id"]
    assert (answer.object, answer.status, answer.model) == ("response", "completed", MODEL)
    assert (answer.output_text, answer.instructions, answer.max_output_tokens) == (
        "Bonjour.", "Answer in French.", 50,
    )  # fmt: skip
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (11, 1)
    assert sent(world) == {
        "model": UPSTREAM,
        "messages": [
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "Hello"},
        ],
        "max_tokens": 50,
        "temperature": 0.2,
    }


def test_a_function_call_round_trip(world: World) -> None:
    world.fake.script(
        UPSTREAM, tool_calls=[{"id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'}]
    )
    tools: Any = [
        {"type": "function", "name": "weather", "parameters": {"type": "object"}, "strict": True}
    ]
    first = client(world).responses.create(model=MODEL, input="Weather?", tools=tools)
    [call] = first.output
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments) == ("call_1", "weather", '{"city":"Paris"}')
    assert record_of(first.id).finish_reason == "tool_calls"
    assert sent(world)["tools"] == [
        {
            "type": "function",
            "function": {"name": "weather", "parameters": {"type": "object"}, "strict": True},
        }
    ]

    world.fake.reset()
    world.fake.script(UPSTREAM, text="18C in Paris.")
    items: Any = [
        {"role": "user", "content": "Weather?"},
        *(item.model_dump(exclude_none=True) for item in first.output),
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
    ]
    second = client(world).responses.create(model=MODEL, input=items, tools=tools)
    assert second.output_text == "18C in Paris."
    assert sent(world)["messages"] == [
        {"role": "user", "content": "Weather?"},
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
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
    ]


def test_json_schema_is_a_response_format(world: World) -> None:
    world.fake.script(UPSTREAM, text='{"city": "Paris"}')
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    answer = client(world).responses.create(
        model=MODEL,
        input="Where?",
        text={"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}},
    )
    assert json.loads(answer.output_text) == {"city": "Paris"}
    assert sent(world)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": schema, "strict": True},
    }


def test_reasoning_comes_back_as_a_reasoning_item(world: World) -> None:
    world.fake.script("deepseek-ai/DeepSeek-R1", text="42.", reasoning="Six times seven.")
    answer = client(world).responses.create(
        model="deepseek/deepseek-r1", input="?", reasoning={"effort": "high"}
    )
    reasoning, message = answer.output
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == ["Six times seven."]
    assert message.type == "message" and answer.output_text == "42."
    body = world.fake.requests("deepseek-ai/DeepSeek-R1")[0]["body"]
    assert "reasoning_effort" not in body  # the offering declares no efforts: none is sent


def test_a_translated_stream_is_openai_s_event_sequence(world: World) -> None:
    world.fake.script(UPSTREAM, text="One two three")
    response, events = streamed(world, {"model": MODEL, "input": "hi"})
    names = [name for name, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 3,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert deltas == ["One", " two", " three"]
    completed = events[-1][1]["response"]
    assert completed["id"] == "resp_" + response.headers["x-momor-request-id"]
    assert completed["output"][0]["content"][0]["text"] == "One two three"
    assert completed["usage"]["output_tokens"] > 0
    assert record(response).api == "responses"


def test_the_sdk_streams_a_function_call(world: World) -> None:
    world.fake.script(UPSTREAM, tool_calls=[{"id": "call_2", "name": "f", "arguments": '{"a": 1}'}])
    tools: Any = [{"type": "function", "name": "f", "parameters": {}, "strict": False}]
    with client(world).responses.stream(model=MODEL, input="Call f.", tools=tools) as stream:
        events = list(stream)
        final = stream.get_final_response()
    fragments = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert "".join(fragments) == '{"a": 1}'
    [call] = final.output
    assert call.type == "function_call" and call.call_id == "call_2"
    assert final.usage is not None and final.usage.total_tokens > 0


def test_a_translated_stream_broken_after_output_ends_on_response_failed(world: World) -> None:
    world.fake.script(UPSTREAM, text="one two three four", drop_after=2)
    response, events = streamed(world, {"model": MODEL, "input": "hi"})
    names = [name for name, _ in events]
    assert names[-2:] == ["error", "response.failed"]
    assert "response.completed" not in names
    failed = events[-1][1]["response"]
    assert failed["status"] == "failed"
    assert failed["output"][0]["status"] == "incomplete"
    assert failed["output"][0]["content"][0]["text"] == "one two"
    row = record(response)
    assert (row.api, row.status) == ("responses", "failed")


def test_the_sdk_raises_when_a_translated_stream_breaks(world: World) -> None:
    world.fake.script(UPSTREAM, text="one two three four", drop_after=2)
    stream = client(world).responses.stream(model=MODEL, input="hi")
    with pytest.raises(openai.APIError, match="mid-answer"), stream as events:
        list(events)


def test_a_translated_call_is_recorded_at_its_exact_cost(world: World) -> None:
    usage = {"prompt_tokens": 2000, "completion_tokens": 500}
    world.fake.script(UPSTREAM, usage=usage)
    answer = client(world).responses.create(model=MODEL, input="hi")
    row = record_of(answer.id)
    assert (row.api, row.status, row.model, row.provider) == (
        "responses",
        "success",
        MODEL,
        "mistral",
    )
    assert (row.prompt_tokens, row.completion_tokens) == (2000, 500)
    # mistral-small: $0.10 a million prompt tokens, $0.30 a million out
    assert (
        row.cost == (Decimal(2000) * Decimal("0.10") + Decimal(500) * Decimal("0.30")) / 1_000_000
    )


def test_the_route_has_its_api_alias(world: World) -> None:
    response = world.post({"model": MODEL, "input": "hi"}, path="/api" + PATH)
    assert response.status_code == 200, response.text
    assert response.json()["output"][0]["content"][0]["text"] == TEXT
