"""The Anthropic adapter as pure translation, from recorded bodies and streams under
fixtures/anthropic: every row of the spec's table both ways, tool calls and reasoning round
trips, finish reasons, usage and errors. Every request it builds is also held to the fake's
idea of valid (the anthropic SDK's request types and the API's own rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.providers import adapter_for
from gateway.providers.anthropic import AnthropicAdapter
from gateway.providers.anthropic.request import request_body
from gateway.providers.anthropic.response import failure, reply
from gateway.providers.anthropic.stream import AnthropicStream
from gateway.providers.contract import CannotCarry, Failure, StreamFailed, Target, Usage
from gateway.relay.sse import Decoder
from testkit.fake_anthropic import invalid

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
SONNET = "claude-sonnet-4-5-20250929"
BUDGET_EFFORTS = ("low", "medium", "high")
ADAPTIVE_EFFORTS = ("low", "medium", "high", "xhigh", "max")
ASK = [{"role": "user", "content": "What is the capital of France?"}]
ANTHROPIC_ASK = [{"role": "user", "content": [{"type": "text", "text": ASK[0]["content"]}]}]


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def translated(body: dict[str, Any], efforts: tuple[str, ...] = BUDGET_EFFORTS) -> dict[str, Any]:
    """The request for `body`, checked to be one the API takes."""
    out = request_body(body, SONNET, efforts, stream=bool(body.get("stream")))
    assert invalid(out) is None, invalid(out)
    return out


def streamed(name: str) -> tuple[AnthropicStream, list[dict[str, Any]]]:
    translator = AnthropicStream()
    events = Decoder().feed((FIXTURES / name).read_bytes())
    return translator, [chunk for event in events for chunk in translator.feed(event)]


def target(stream: bool = False) -> Target:
    return Target(
        base_url="https://api.example",
        secret="sk-ant-secret",
        model_id="anthropic/claude-sonnet-4-5",
        upstream_id=SONNET,
        stream=stream,
        reasoning_efforts=BUDGET_EFFORTS,
        momor_key=True,
    )


# Request: the adapter and the table's rows


def test_it_is_the_registered_adapter_for_anthropic() -> None:
    assert isinstance(adapter_for("anthropic"), AnthropicAdapter)


def test_it_posts_to_the_messages_api_with_the_key_and_version_headers() -> None:
    prepared = AnthropicAdapter().prepare({"messages": ASK}, target())

    assert prepared.url == "https://api.example/v1/messages"
    assert prepared.headers == {
        "x-api-key": "sk-ant-secret",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert json.loads(prepared.body) == {
        "model": SONNET,
        "messages": ANTHROPIC_ASK,
        "max_tokens": 4096,
    }


def test_a_streamed_call_asks_for_a_stream() -> None:
    prepared = AnthropicAdapter().prepare({"messages": ASK}, target(stream=True))

    assert json.loads(prepared.body)["stream"] is True


def test_it_translates_every_row_of_the_table() -> None:
    """System and developer messages, parts, tools, response_format, the ceiling, sampling,
    stop, service tier and user; seed, penalties, n, logprobs and metadata left off."""
    assert translated(load("every_field.chat.json")) == load("every_field.anthropic.json")


def test_it_replays_reasoning_details_as_signed_thinking_and_redacted_blocks() -> None:
    assert translated(load("reasoning_replay.chat.json")) == load("reasoning_replay.anthropic.json")


def test_it_groups_consecutive_tool_results_in_one_user_turn() -> None:
    calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for n in (1, 2, 3)
    ]
    body = {
        "messages": [
            *ASK,
            {"role": "assistant", "content": None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": f"call_{n}", "content": str(n)} for n in (1, 2, 3)),
        ],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }

    turns = translated(body)["messages"]

    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": f"call_{n}", "content": str(n)} for n in (1, 2, 3)
    ]
    assert turns[1]["content"][0] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "f",
        "input": {},
    }


def test_it_merges_consecutive_turns_of_one_role() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "One."},
            {"role": "user", "content": [{"type": "text", "text": "Two."}]},
            {"role": "assistant", "content": "Three."},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "Four."}]},
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Five."},
        ]
    }

    out = translated(body)

    assert out["system"] == [{"type": "text", "text": "Be brief."}]
    assert out["messages"] == [
        {"role": "user", "content": [text("One."), text("Two.")]},
        {"role": "assistant", "content": [text("Three."), text("Four.")]},
        {"role": "user", "content": [text("Five.")]},
    ]


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_empty_text_is_left_out_of_an_assistant_turn() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "x"}}
    body = {"messages": [*ASK, {"role": "assistant", "content": "", "tool_calls": [call]}]}

    turns = request_body(body, SONNET, (), stream=False)["messages"]

    assert turns[1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "f", "input": {}}]


def test_input_audio_cannot_be_carried() -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}}
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, audio]}]}

    with pytest.raises(CannotCarry, match=r"^input_audio$"):
        request_body(body, SONNET, (), stream=False)


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ({"file_id": "file-abc"}, "file without file_data"),
        ({"file_data": "data:application/msword;base64,AAAA"}, "file of type application/msword"),
    ],
)
def test_other_files_cannot_be_carried(file: dict[str, str], reason: str) -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "file", "file": file}]}]}

    with pytest.raises(CannotCarry, match=reason):
        request_body(body, SONNET, (), stream=False)


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        ({"type": "function", "function": {"name": "f"}}, None, {"type": "tool", "name": "f"}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("none", False, {"type": "none"}),
        (None, True, None),
    ],
)
def test_tool_choice_and_parallel_tool_calls(
    choice: object, parallel: object, expected: dict[str, Any] | None
) -> None:
    body: dict[str, Any] = {"messages": ASK, "tools": [{"type": "function", "function": {}}]}
    body["tools"][0]["function"]["name"] = "f"
    if choice is not None:
        body["tool_choice"] = choice
    if parallel is not None:
        body["parallel_tool_calls"] = parallel

    out = translated(body)

    assert out["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]
    assert out.get("tool_choice") == expected


@pytest.mark.parametrize(
    ("effort", "efforts", "ceiling", "expected"),
    [
        (None, BUDGET_EFFORTS, None, {"max_tokens": 4096}),
        ("none", BUDGET_EFFORTS, None, {"max_tokens": 4096}),
        ("high", (), None, {"max_tokens": 4096}),
        ("minimal", BUDGET_EFFORTS, None, {"max_tokens": 5120, "budget": 1024}),
        ("low", BUDGET_EFFORTS, None, {"max_tokens": 5120, "budget": 1024}),
        ("medium", BUDGET_EFFORTS, None, {"max_tokens": 8192, "budget": 4096}),
        ("high", BUDGET_EFFORTS, None, {"max_tokens": 20480, "budget": 16384}),
        ("xhigh", BUDGET_EFFORTS, None, {"max_tokens": 20480, "budget": 16384}),
        ("high", BUDGET_EFFORTS, 8000, {"max_tokens": 8000, "budget": 6400}),
        ("medium", BUDGET_EFFORTS, 8000, {"max_tokens": 8000, "budget": 4000}),
        ("low", BUDGET_EFFORTS, 8000, {"max_tokens": 8000, "budget": 1600}),
        ("low", BUDGET_EFFORTS, 2048, {"max_tokens": 2048, "budget": 1024}),
        ("low", BUDGET_EFFORTS, 1025, {"max_tokens": 1025, "budget": 1024}),
        ("low", BUDGET_EFFORTS, 1024, {"max_tokens": 1024}),
        ("xhigh", ADAPTIVE_EFFORTS, None, {"max_tokens": 36864, "effort": "xhigh"}),
        ("minimal", ADAPTIVE_EFFORTS, 3000, {"max_tokens": 3000, "effort": "low"}),
    ],
)
def test_reasoning_effort_as_thinking_and_the_ceiling_always_sent(
    effort: str | None, efforts: tuple[str, ...], ceiling: int | None, expected: dict[str, Any]
) -> None:
    body: dict[str, Any] = {"messages": ASK}
    if effort is not None:
        body["reasoning_effort"] = effort
    if ceiling is not None:
        body["max_tokens"] = ceiling

    out = translated(body, efforts)

    assert out["max_tokens"] == expected["max_tokens"]
    if "budget" in expected:
        assert out["thinking"] == {"type": "enabled", "budget_tokens": expected["budget"]}
    elif "effort" in expected:
        assert out["thinking"] == {"type": "adaptive"}
        assert out["output_config"] == {"effort": expected["effort"]}
    else:
        assert "thinking" not in out
        assert "output_config" not in out


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    out = translated({"messages": ASK, "max_completion_tokens": 100, "max_tokens": 50})

    assert out["max_tokens"] == 100


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"stop": "END"}, {"stop_sequences": ["END"]}),
        ({"stop": ["a", "b"]}, {"stop_sequences": ["a", "b"]}),
        ({"service_tier": "auto"}, {"service_tier": "auto"}),
        ({"service_tier": "default"}, {"service_tier": "standard_only"}),
        ({"service_tier": "flex"}, {}),
        ({"service_tier": "priority"}, {}),
        ({"user": "u-1"}, {"metadata": {"user_id": "u-1"}}),
        ({"response_format": {"type": "json_object"}}, {}),
        ({"response_format": {"type": "text"}}, {}),
        (
            {"temperature": 0, "top_p": 0.5, "top_k": 5},
            {"temperature": 0, "top_p": 0.5, "top_k": 5},
        ),
        ({"seed": 1, "n": 2, "logprobs": True, "metadata": {"a": "b"}}, {}),
        ({"frequency_penalty": 1, "presence_penalty": 1, "top_logprobs": 3}, {}),
    ],
)
def test_one_to_one_fields_and_fields_left_off(
    fields: dict[str, Any], expected: dict[str, Any]
) -> None:
    out = translated({"messages": ASK, **fields})

    base = {"model": SONNET, "messages": ANTHROPIC_ASK, "max_tokens": 4096}
    assert out == {**base, **expected}


def test_a_json_schema_joins_the_effort_in_output_config() -> None:
    schema = {"type": "object", "properties": {}}
    body = {
        "messages": ASK,
        "reasoning_effort": "high",
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    }

    out = translated(body, ADAPTIVE_EFFORTS)

    assert out["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": schema},
    }


# Response


def test_it_translates_thinking_redacted_thinking_text_and_tool_use() -> None:
    answer = reply((FIXTURES / "message_thinking_tool_use.json").read_bytes())

    body = dict(answer.body)
    assert isinstance(body.pop("created"), int)
    assert body == load("message_thinking_tool_use.chat.json")
    assert (answer.finish_reason, answer.native_finish_reason) == ("tool_calls", "tool_use")
    assert answer.usage == Usage(
        prompt_tokens=4672,
        completion_tokens=156,
        cached_tokens=3000,
        cache_write_tokens=1200,
        reasoning_tokens=98,
    )


def message(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> bytes:
    return json.dumps(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": SONNET,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 3, **usage},
        }
    ).encode()


def test_a_plain_text_answer() -> None:
    answer = reply(message([text("Paris.")]))

    assert answer.body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Paris."},
            "logprobs": None,
            "finish_reason": "stop",
            "native_finish_reason": "end_turn",
        }
    ]
    assert answer.body["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 3,
        "total_tokens": 13,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def test_a_turn_that_only_calls_tools_has_null_content() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}

    answer = reply(message([use], "tool_use"))

    assert answer.body["choices"][0]["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


@pytest.mark.parametrize(
    ("native", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
def test_finish_reasons_are_mapped_and_the_native_one_kept(native: str, finish: str) -> None:
    answer = reply(message([text("x")], native))

    assert answer.body["choices"][0]["finish_reason"] == finish
    assert (answer.finish_reason, answer.native_finish_reason) == (finish, native)


def test_an_answer_that_is_not_a_message_cannot_be_read() -> None:
    with pytest.raises(ValueError, match="not an Anthropic message"):
        reply(b'{"choices": []}')


# A reply sent back


def test_a_reply_sent_back_replays_its_thinking_exactly() -> None:
    original = load("message_thinking_tool_use.json")["content"]
    sent_back = reply((FIXTURES / "message_thinking_tool_use.json").read_bytes())
    assistant = sent_back.body["choices"][0]["message"]
    result = {"role": "tool", "tool_call_id": "toolu_01A09q90qw90lq917835lq9", "content": "18C"}

    turns = request_body({"messages": [*ASK, assistant, result]}, SONNET, (), stream=False)[
        "messages"
    ]

    assert turns[1]["content"] == [
        *original[:3],
        text("Let me check the weather."),
        {**original[5], "input": {"city": "Paris", "unit": "celsius"}},
    ]


def test_a_streamed_reply_sent_back_replays_its_thinking_exactly() -> None:
    _, chunks = streamed("stream_thinking_tool_use.sse")
    details = [
        detail
        for chunk in chunks
        for choice in chunk["choices"]
        for detail in choice["delta"].get("reasoning_details", ())
    ]
    assistant = {"role": "assistant", "content": "Let me check the weather."}

    turns = request_body(
        {"messages": [*ASK, {**assistant, "reasoning_details": details}]}, SONNET, (), False
    )["messages"]

    assert turns[1]["content"][:2] == [
        {
            "type": "thinking",
            "thinking": "The user asks for the weather in Paris.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {
            "type": "redacted_thinking",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        },
    ]


# Stream


def test_it_streams_thinking_redacted_thinking_text_and_tool_calls_as_chunks() -> None:
    translator, chunks = streamed("stream_thinking_tool_use.sse")

    envelope = {"id": "", "object": "chat.completion.chunk", "created": 0, "model": ""}
    assert [{k: c[k] for k in envelope} for c in chunks] == [envelope] * len(chunks)
    assert [c["choices"][0] for c in chunks[:-1]] == load("stream_thinking_tool_use.chunks.json")
    assert chunks[-1] == {
        **envelope,
        "choices": [],
        "usage": {
            "prompt_tokens": 4672,
            "completion_tokens": 156,
            "total_tokens": 4828,
            "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1200},
            "completion_tokens_details": {"reasoning_tokens": 98},
        },
    }
    state = translator.state
    assert (state.finish_reason, state.native_finish_reason, state.finished) == (
        "tool_calls",
        "tool_use",
        True,
    )
    assert state.usage == Usage(4672, 156, 3000, 1200, 98)


def test_an_error_event_mid_stream_fails_it_as_overloaded() -> None:
    with pytest.raises(StreamFailed) as raised:
        streamed("stream_error.sse")

    assert raised.value.failure == Failure(
        529,
        "Overloaded",
        {"message": "Overloaded", "type": "server_error", "param": None, "code": None},
    )


def test_a_stream_is_not_finished_before_message_stop() -> None:
    translator = AnthropicStream()
    events = Decoder().feed((FIXTURES / "stream_thinking_tool_use.sse").read_bytes())

    for event in events[:-1]:
        translator.feed(event)

    assert translator.state.finished is False
    assert translator.state.finish_reason == "tool_calls"


# Errors


@pytest.mark.parametrize(
    ("status", "kind", "openai_kind"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "authentication_error"),
        (403, "permission_error", "permission_error"),
        (404, "not_found_error", "not_found_error"),
        (413, "request_too_large", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "api_error", "server_error"),
        (529, "overloaded_error", "server_error"),
    ],
)
def test_error_bodies_become_openai_error_objects(status: int, kind: str, openai_kind: str) -> None:
    data = {"type": "error", "error": {"type": kind, "message": "Nope."}, "request_id": "req_1"}

    found = failure(status, json.dumps(data).encode())

    assert found == Failure(
        status, "Nope.", {"message": "Nope.", "type": openai_kind, "param": None, "code": None}
    )


def test_an_error_body_that_is_not_anthropics_is_a_bare_failure() -> None:
    assert failure(502, b"<html>Bad gateway</html>") == Failure(502, "HTTP 502")
    assert failure(503, b"") == Failure(503, "HTTP 503")
