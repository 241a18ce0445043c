"""POST /v1/responses on OpenAI's own offerings (and Azure's), over HTTP with OpenAI's SDK as the
client against the fake upstream: the call goes as the client wrote it (but for `model`,
`store` and Momor's fields), the answer comes back as OpenAI wrote it with Momor's id, plain
and streamed; failover before output across native and translated offerings; a stream broken
after output ends on `error` and `response.failed`; hosted tools go to OpenAI alone; the
record keeps api `responses` and is billed on OpenAI's usage."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import openai
import orjson
import pytest

from billing.models import Attempt, Generation
from gateway.providers.responses.wire import momor_reasoning
from tests.gateway.calls import (
    error_of,
    settled_world,  # noqa: F401 - autouse
    tried,
    wait_recorded,
)
from tests.gateway.conftest import World

PATH = "/v1/responses"
TEXT = "Hello from the fake upstream."
OPENAI_ENCRYPTED = "gAAAAfake-openai-encrypted-reasoning"


def client(world: World) -> openai.OpenAI:
    return openai.OpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)


def sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Each event of a Responses stream: its `event:` name and its data."""
    found = []
    for block in text.split("\n\n"):
        if not block:
            continue
        name, data = block.split("\n")
        assert name.startswith("event: ") and data.startswith("data: "), block
        found.append((name.removeprefix("event: "), orjson.loads(data.removeprefix("data: "))))
    return found


def streamed(world: World, body: dict[str, Any]) -> tuple[httpx.Response, list[Any]]:
    response = world.post({**body, "stream": True}, path=PATH)
    assert response.status_code == 200, response.text
    return response, sse(response.text)


def record(response: httpx.Response) -> Generation:
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    return Generation.objects.get(request_id=request_id)


def test_openai_is_sent_the_call_as_written_and_answers_with_momor_s_id(world: World) -> None:
    body: dict[str, Any] = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [],
             "encrypted_content": OPENAI_ENCRYPTED},
        ],
        "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
        "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}}},
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 64,
        "metadata": {"team": "a"},
        "store": True,
    }  # fmt: skip
    raw = client(world).responses.with_raw_response.create(
        model="openai/gpt-5", extra_body={"provider": {"order": ["openai"]}}, **body
    )
    answer = raw.parse()
    assert answer.id == "resp_" + raw.headers["x-momor-request-id"]
    assert (answer.model, answer.output_text, answer.store) == ("openai/gpt-5", TEXT, False)
    assert raw.headers["x-momor-provider"] == "openai"
    sent = world.fake.requests("gpt-5")
    assert [r["path"] for r in sent] == ["/v1/responses"]
    assert sent[0]["body"] == {**body, "model": "gpt-5", "store": False}
    assert sent[0]["headers"]["authorization"] == "Bearer momor-upstream-secret-0001"


def test_a_native_stream_is_openai_s_events_with_momor_s_id(world: World) -> None:
    world.fake.script("gpt-5", text="One two three", reasoning="Think.")
    response, events = streamed(world, {"model": "openai/gpt-5", "input": "hi"})
    names = [name for name, _ in events]
    assert names == [data["type"] for _, data in events]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert names[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert names[-1] == "response.completed"
    assert "response.reasoning_summary_text.delta" in names
    rid = "resp_" + response.headers["x-momor-request-id"]
    lifecycle = [data["response"] for _, data in events if "response" in data]
    assert [(r["id"], r["model"]) for r in lifecycle] == [(rid, "openai/gpt-5")] * 3
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert "".join(deltas) == "One two three"
    assert lifecycle[-1]["usage"]["output_tokens"] == 1 + 3  # a reasoning piece, three words


def test_the_sdk_streams_a_native_answer(world: World) -> None:
    with client(world).responses.stream(model="openai/gpt-5", input="hi") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.output_text == TEXT
    assert final.id.startswith("resp_")


def test_momor_s_reasoning_items_are_left_out_for_openai(world: World) -> None:
    mine = {"type": "reasoning", "summary": [], "encrypted_content": momor_reasoning([{"a": 1}])}
    theirs = {"type": "reasoning", "summary": [], "encrypted_content": OPENAI_ENCRYPTED}
    user = {"role": "user", "content": "hi"}
    answer = client(world).responses.create(
        model="openai/gpt-5",
        input=[user, mine, theirs],
    )
    assert answer.output_text == TEXT
    assert world.fake.requests("gpt-5")[0]["body"]["input"] == [user, theirs]


def test_a_native_function_call_comes_back_as_openai_wrote_it(world: World) -> None:
    world.fake.script("gpt-5", tool_calls=[{"id": "call_7", "name": "f", "arguments": '{"a":1}'}])
    answer = client(world).responses.create(
        model="openai/gpt-5",
        input="Call f.",
        tools=[{"type": "function", "name": "f", "parameters": {}, "strict": False}],
    )
    [call] = answer.output
    assert (call.type, call.call_id, call.name, call.arguments) == (
        "function_call", "call_7", "f", '{"a":1}',
    )  # fmt: skip
    row = record_of(answer.id)
    assert (row.finish_reason, row.native_finish_reason) == ("tool_calls", "completed")


def record_of(response_id: str) -> Generation:
    request_id = response_id.removeprefix("resp_")
    wait_recorded(request_id)
    return Generation.objects.get(request_id=request_id)


def test_the_record_keeps_api_responses_and_openai_s_usage_at_exact_cost(world: World) -> None:
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 400},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 100},
        "total_tokens": 1300,
    }
    world.fake.script("gpt-5", usage=usage)
    answer = client(world).responses.create(model="openai/gpt-5", input="hi")
    assert answer.usage is not None and answer.usage.input_tokens == 1000
    row = record_of(answer.id)
    assert (row.api, row.status, row.model, row.provider, row.streamed) == (
        "responses", "success", "openai/gpt-5", "openai", False,
    )  # fmt: skip
    tokens = (row.prompt_tokens, row.completion_tokens, row.cached_tokens, row.reasoning_tokens)
    assert tokens == (1000, 300, 400, 100)
    # gpt-5 on OpenAI: $1.25 a million prompt tokens (cache reads at the prompt price: the
    # offering names none), $10 a million out
    assert row.cost == (Decimal(1000) * Decimal("1.25") + Decimal(300) * 10) / 1_000_000


def test_a_streamed_call_is_recorded_with_openai_s_usage(world: World) -> None:
    world.fake.script("gpt-5", text="a b c", usage={"input_tokens": 20})
    response, _ = streamed(world, {"model": "openai/gpt-5", "input": "hi"})
    row = record(response)
    assert (row.api, row.status, row.streamed, row.usage_estimated) == (
        "responses", "success", True, False,
    )  # fmt: skip
    assert (row.prompt_tokens, row.completion_tokens) == (20, 3)
    assert row.first_token_ms is not None


def test_a_failed_offering_moves_the_call_to_azure_natively(world: World) -> None:
    world.fake.script("gpt-5", fail={"status": 503})
    answer = client(world).responses.create(model="openai/gpt-5", input="hi")
    assert answer.output_text == TEXT
    assert tried(world.fake) == ["gpt-5", "gpt-5-azure-eu"]
    [azure] = world.fake.requests("gpt-5-azure-eu")
    assert azure["path"] == "/azure-eu/openai/v1/responses"
    assert azure["headers"]["api-key"] == "momor-upstream-secret-0001"
    row = record_of(answer.id)
    assert [a.provider for a in Attempt.objects.filter(generation=row).order_by("position")] == [
        "openai",
        "azure",
    ]


def test_failover_goes_from_a_native_offering_to_a_translated_one(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 500})
    answer = client(world).responses.create(
        model="openai/gpt-5-mini", input="hi", extra_body={"models": ["mistral/mistral-small"]}
    )
    assert answer.output_text == TEXT
    assert answer.model == "mistral/mistral-small"
    assert tried(world.fake) == ["gpt-5-mini", "mistral-small-latest"]
    assert world.fake.requests("mistral-small-latest")[0]["path"] == "/mistral/v1/chat/completions"


def test_a_stream_that_fails_before_output_moves_on(world: World) -> None:
    world.fake.script("gpt-5", stream_error_after=0)
    response, events = streamed(world, {"model": "openai/gpt-5", "input": "hi"})
    assert response.headers["x-momor-provider"] == "azure@eu"
    assert [name for name, _ in events][-1] == "response.completed"
    assert "error" not in [name for name, _ in events]
    assert tried(world.fake) == ["gpt-5", "gpt-5-azure-eu"]


def test_a_stream_fails_over_from_a_native_offering_to_a_translated_one(world: World) -> None:
    world.fake.script("gpt-5-mini", stream_error_after=0)
    body = {"model": "openai/gpt-5-mini", "models": ["mistral/mistral-small"], "input": "hi"}
    response, events = streamed(world, body)
    assert response.headers["x-momor-provider"] == "mistral"
    names = [name for name, _ in events]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert events[-1][1]["response"]["id"] == "resp_" + response.headers["x-momor-request-id"]
    assert tried(world.fake) == ["gpt-5-mini", "mistral-small-latest"]


@pytest.mark.parametrize("failure", [{"stream_error_after": 4}, {"drop_after": 4}])
def test_a_native_stream_broken_after_output_ends_on_response_failed(
    world: World, failure: dict[str, int]
) -> None:
    world.fake.script("gpt-5", text="one two three four five", **failure)
    response, events = streamed(world, {"model": "openai/gpt-5", "input": "hi"})
    names = [name for name, _ in events]
    assert "response.output_text.delta" in names
    assert names[-2:] == ["error", "response.failed"]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    failed = events[-1][1]["response"]
    assert (failed["status"], failed["id"]) == (
        "failed", "resp_" + response.headers["x-momor-request-id"],
    )  # fmt: skip
    assert failed["error"]["code"] == "server_error"
    row = record(response)
    assert (row.api, row.status, row.finish_reason) == ("responses", "failed", "error")
    assert tried(world.fake) == ["gpt-5"]


def test_the_sdk_raises_on_a_stream_broken_after_output(world: World) -> None:
    world.fake.script("gpt-5", text="one two three four five", stream_error_after=4)
    seen: list[str] = []
    stream = client(world).responses.stream(model="openai/gpt-5", input="hi")
    with pytest.raises(openai.APIError, match="The server had an error"), stream as events:
        seen.extend(event.type for event in events)
    assert "response.output_text.delta" in seen


def test_hosted_tools_go_to_openai_s_own_offerings_alone(world: World) -> None:
    world.fake.script("gpt-5", fail={"status": 503})
    response = world.post(
        {"model": "openai/gpt-5", "input": "news?", "tools": [{"type": "web_search"}]}, path=PATH
    )
    error_of(response, 503, None)
    assert tried(world.fake) == ["gpt-5"]  # Azure's offerings left out
    row = record(response)
    excluded = row.routing["excluded"]
    assert {e["provider"] for e in excluded} == {"azure", "azure@eu"}
    assert all("hosted tools (web_search)" in e["reason"] for e in excluded)


def test_hosted_tools_to_a_model_off_openai_are_a_400(world: World) -> None:
    body = {"model": "mistral/mistral-small", "input": "news?", "tools": [{"type": "web_search"}]}
    error = error_of(world.post(body, path=PATH), 400, "invalid_value")
    assert "hosted tools (web_search)" in error["message"]
    assert error["param"] == "tools"
    assert world.fake.requests() == []
