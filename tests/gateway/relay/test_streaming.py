"""The streaming relay: headers once a model has something to show, failover before that, one
error chunk after it, chunks relayed as they arrive, and a client that leaves cancelling the
upstream call."""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson
import pytest

from tests.gateway.calls import (
    ask,
    error_of,
    events,
    settled_world,  # noqa: F401 - autouse
    streamed_text,
    tried,
    wait_recorded,
)
from tests.gateway.conftest import World

# Both upstream clients relay and fail over alike.
pytestmark = pytest.mark.usefixtures("upstream_client")

OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"
TEXT = "one two three four five six"


def stream(world: World, body: dict[str, Any]) -> httpx.Response:
    return world.post({**body, "stream": True})


def test_it_streams_chunks_with_id_and_model_written_over(world: World) -> None:
    world.fake.script(OPENAI, text=TEXT)
    response = stream(world, ask())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-momor-provider"] == "openai"
    assert response.headers["x-momor-model"] == "openai/gpt-5"
    chunks = events(response.text)
    assert chunks[-1] == "[DONE]"
    request_id = response.headers["x-momor-request-id"]
    assert {c["id"] for c in chunks[:-1]} == {request_id}
    assert {c["model"] for c in chunks[:-1]} == {"openai/gpt-5"}
    assert {c["object"] for c in chunks[:-1]} == {"chat.completion.chunk"}
    assert streamed_text(chunks) == TEXT
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_a_streamed_tool_call_comes_through(world: World) -> None:
    world.fake.script(OPENAI, tool_calls=[{"id": "call_1", "name": "f", "arguments": '{"a": 1}'}])
    chunks = events(stream(world, ask()).text)
    calls = [
        call
        for chunk in chunks[:-1]
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    ]
    assert calls[0]["id"] == "call_1"
    assert "".join(c["function"]["arguments"] for c in calls) == '{"a": 1}'
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


# Before output: the next candidate


@pytest.mark.parametrize(
    "script",
    [
        {"fail": {"status": 503}},
        {"fail": {"status": 429}},
        {"fail": {"status": 500, "body": "oops"}},
        {"drop_after": 0},
        {"stream_error_after": 0},
    ],
)
def test_a_failure_before_output_moves_to_the_next_candidate(
    world: World, script: dict[str, Any]
) -> None:
    world.fake.script(OPENAI, **script)
    world.fake.script(AZURE_EU, text=TEXT)
    response = stream(world, ask())
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "azure@eu"
    chunks = events(response.text)
    assert streamed_text(chunks) == TEXT
    assert chunks[-1] == "[DONE]"
    assert tried(world.fake) == [OPENAI, AZURE_EU]


def test_a_chunk_time_out_before_output_moves_to_the_next_candidate(
    world: World, settings: Any
) -> None:
    settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT = 0.3
    world.fake.script(OPENAI, chunk_delay=2)
    response = stream(world, ask())
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "azure@eu"


def test_a_stream_that_ends_before_showing_anything_moves_on(world: World) -> None:
    world.fake.script(OPENAI, text="", chunks=1, finish_reason="")
    world.fake.script(AZURE_EU, text=TEXT)
    response = stream(world, ask())
    # An empty answer that ends with no finish reason shows nothing: the next one serves.
    assert response.headers["x-momor-provider"] == "azure@eu"
    assert streamed_text(events(response.text)) == TEXT


def test_a_stream_where_every_candidate_fails_before_output_is_an_http_error(
    world: World,
) -> None:
    for upstream_id in (OPENAI, AZURE_EU, AZURE):
        world.fake.script(upstream_id, drop_after=0)
    response = stream(world, ask())
    error_of(response, 503, "providers_unavailable")
    assert response.headers["content-type"].startswith("application/json")


def test_a_provider_request_error_in_a_stream_comes_back_as_http(world: World) -> None:
    body = {"error": {"message": "bad", "type": "invalid_request_error", "param": "x", "code": "c"}}
    world.fake.script(OPENAI, fail={"status": 400, "body": body})
    response = stream(world, ask())
    assert response.status_code == 400
    assert response.json() == body
    assert tried(world.fake) == [OPENAI]


# After output: one error chunk


def error_chunk_of(response: httpx.Response, provider_label: str) -> dict[str, Any]:
    chunks = events(response.text)
    assert "[DONE]" not in chunks
    last = chunks[-1]
    assert set(last) == {"id", "object", "created", "model", "provider", "error", "choices"}
    assert last["id"] == response.headers["x-momor-request-id"]
    assert last["object"] == "chat.completion.chunk"
    assert isinstance(last["created"], int)
    assert last["model"] == "openai/gpt-5"
    assert last["provider"] == provider_label
    assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    assert set(last["error"]) == {"code", "message"}
    assert [c for c in chunks[:-1] if "error" in c] == []
    error: dict[str, Any] = last["error"]
    return error


def test_a_drop_after_output_ends_on_one_error_chunk(world: World) -> None:
    world.fake.script(OPENAI, text=TEXT, drop_after=2)
    response = stream(world, ask())
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "openai"
    error = error_chunk_of(response, "OpenAI")
    assert error == {"code": 502, "message": "The provider closed the connection mid-answer."}
    assert streamed_text(events(response.text)) == "one two"
    assert tried(world.fake) == [OPENAI]


def test_an_error_event_after_output_ends_on_one_error_chunk(world: World) -> None:
    world.fake.script(OPENAI, text=TEXT, stream_error_after=3)
    response = stream(world, ask())
    error = error_chunk_of(response, "OpenAI")
    assert error["code"] == 502
    assert error["message"]
    assert tried(world.fake) == [OPENAI]


def test_the_error_chunk_names_the_provider_label(world: World) -> None:
    world.fake.script(AZURE_EU, text=TEXT, drop_after=1)
    response = stream(world, ask(provider={"order": ["azure@eu"]}))
    error_chunk_of(response, "Azure OpenAI")


def test_the_sdk_raises_on_the_error_chunk(world: World) -> None:
    import openai

    world.fake.script(OPENAI, text=TEXT, drop_after=2)
    client = openai.OpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)
    received = []
    with pytest.raises(openai.APIError, match="mid-answer"):
        for chunk in client.chat.completions.create(**ask(), stream=True):
            received.append(chunk)
    assert "".join(c.choices[0].delta.content or "" for c in received if c.choices) == "one two"


# Timing: held back until something shows, then relayed as it arrives


def test_headers_wait_until_a_chunk_shows_something(world: World) -> None:
    world.fake.script(OPENAI, text="a b", chunk_delay=0.6)
    started = time.monotonic()
    with world.open_stream(ask(stream=True)) as response:
        headers_after = time.monotonic() - started
        first = next(response.iter_lines())
        request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    # The fake sends its role-only chunk at once and its first word 0.6 s later.
    assert headers_after >= 0.5
    chunk = orjson.loads(first.removeprefix("data: "))
    assert chunk["choices"][0]["delta"]["role"] == "assistant"


def test_chunks_are_relayed_as_they_arrive(world: World) -> None:
    world.fake.script(OPENAI, text="a b c d e", chunk_delay=0.3)
    arrivals: list[float] = []
    started = time.monotonic()
    with world.open_stream(ask(stream=True)) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"content":"' in line and '"content":""' not in line:
                arrivals.append(time.monotonic() - started)
    assert len(arrivals) == 5
    assert arrivals[-1] - arrivals[0] >= 0.9  # four gaps of 0.3 s, not one burst at the end


# The client leaves


def test_a_client_that_leaves_mid_stream_cancels_the_upstream_call(world: World) -> None:
    world.fake.script(OPENAI, text=" ".join(["word"] * 40), chunk_delay=0.2)
    with world.open_stream(ask(stream=True)) as response:
        assert response.status_code == 200
        request_id = response.headers["x-momor-request-id"]
        for line in response.iter_lines():
            if '"content":"word' in line:
                break
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        calls = world.fake.requests(OPENAI)
        if calls and calls[0]["disconnected"]:
            break
        time.sleep(0.05)
    calls = world.fake.requests(OPENAI)
    assert calls[0]["disconnected"] is True
    assert calls[0]["completed"] is False
    assert time.monotonic() - deadline < 0  # well before the 8 s the answer would take
    wait_recorded(request_id)


def test_text_of_every_kind_arrives_whole_with_each_chunk_written_over(world: World) -> None:
    text = 'plain words, then "quotes", a\nnew line, tabs\tand héllo 世界 🙂 and more plain words'
    world.fake.script(OPENAI, text=text, chunks=12)
    response = stream(world, ask())
    chunks = events(response.text)
    request_id = response.headers["x-momor-request-id"]
    assert streamed_text(chunks) == text
    assert {(c["id"], c["model"], c["provider"]) for c in chunks[:-1]} == {
        (request_id, "openai/gpt-5", "OpenAI")
    }
    assert all("usage" not in c for c in chunks[:-1])
    with_usage = events(stream(world, ask(stream_options={"include_usage": True})).text)
    assert streamed_text(with_usage) == text
    assert with_usage[-2]["usage"]["completion_tokens"] > 0
