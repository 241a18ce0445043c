"""The Gemini translation, pure: recorded Chat Completions bodies to Gemini requests, and
recorded Gemini answers, plain and streamed, back to Chat Completions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.providers.contract import CannotCarry, Event, StreamFailed, Target, Usage
from gateway.providers.gemini.request import request_body
from gateway.providers.gemini.response import failure_of, reply_of
from gateway.providers.gemini.stream import GeminiStream
from gateway.relay.sse import Decoder
from testkit.fake_gemini import invalid

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
SIG_CALL = "c2lnLWNhbGw="
SIG_THOUGHT = "c2lnLXRob3VnaHQ="
SIG_TEXT = "c2lnLXRleHQ="


def fixture(name: str) -> Any:
    return orjson.loads((FIXTURES / name).read_bytes())


def offering(upstream_id: str = "gemini-3-pro-preview", efforts: tuple[str, ...] = ()) -> Target:
    return Target(
        base_url="https://g.test/v1beta",
        secret="",
        model_id="google/gemini-3-pro",
        upstream_id=upstream_id,
        reasoning_efforts=efforts,
    )


def streamed(name: str) -> tuple[list[dict[str, Any]], GeminiStream]:
    translator = GeminiStream()
    chunks = [c for e in Decoder().feed((FIXTURES / name).read_bytes()) for c in translator.feed(e)]
    return [*chunks, *translator.close()], translator


def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def ask(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"messages": list(messages), **fields}


USER = {"role": "user", "content": "hi"}
ASKED_HI = [{"role": "user", "parts": [{"text": "hi"}]}]


# Request


def test_every_row_of_the_table_goes_as_gemini_reads_it() -> None:
    recorded = fixture("request_every_row.json")
    body = request_body(recorded["chat"], offering(efforts=("low", "high")))
    assert body == recorded["gemini"]


def test_the_translated_request_is_one_the_sdk_types_accept() -> None:
    recorded = fixture("request_every_row.json")
    assert invalid(recorded["gemini"], "gemini-3-pro-preview") is None


def test_a_call_with_no_effort_sends_no_thinking_config() -> None:
    body = request_body(ask(USER), offering(efforts=("low", "high")))
    assert body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_an_effort_on_a_model_that_takes_none_is_left_off() -> None:
    body = request_body(ask(USER, reasoning_effort="high"), offering())
    assert "generationConfig" not in body


@pytest.mark.parametrize(
    ("effort", "thinking"),
    [
        ("low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("none", {"thinkingBudget": 0}),
    ],
)
def test_a_gemini_2_5_model_takes_the_effort_as_a_budget(
    effort: str, thinking: dict[str, Any]
) -> None:
    body = request_body(
        ask(USER, reasoning_effort=effort),
        offering("gemini-2.5-flash", ("none", "low", "medium", "high")),
    )
    assert body["generationConfig"] == {"thinkingConfig": thinking}


def test_the_effort_goes_as_the_nearest_deeper_level() -> None:
    body = request_body(
        ask(USER, reasoning_effort="minimal"), offering(efforts=("low", "medium", "high"))
    )
    assert body["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "LOW",
        "includeThoughts": True,
    }


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
    ],
)
def test_tool_choice_goes_as_the_calling_mode(choice: str, config: dict[str, Any]) -> None:
    tool = {"type": "function", "function": {"name": "f"}}
    body = request_body(ask(USER, tools=[tool], tool_choice=choice), offering())
    assert body["tools"] == [{"functionDeclarations": [{"name": "f"}]}]
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_json_object_asks_for_json_only() -> None:
    body = request_body(ask(USER, response_format={"type": "json_object"}), offering())
    assert body["generationConfig"] == {"responseMimeType": "application/json"}


def test_a_single_stop_string_and_max_tokens_alone() -> None:
    body = request_body(ask(USER, stop="END", max_tokens=64), offering())
    assert body["generationConfig"] == {"maxOutputTokens": 64, "stopSequences": ["END"]}


@pytest.mark.parametrize(
    ("tier", "sent"), [("flex", "flex"), ("priority", "priority"), ("default", "standard")]
)
def test_service_tier_goes_as_geminis_tier(tier: str, sent: str) -> None:
    assert request_body(ask(USER, service_tier=tier), offering())["serviceTier"] == sent


@pytest.mark.parametrize("tier", ["auto", "scale"])
def test_a_service_tier_gemini_has_no_counterpart_for_is_left_off(tier: str) -> None:
    assert "serviceTier" not in request_body(ask(USER, service_tier=tier), offering())


def test_reasoning_details_are_replayed_as_signed_thoughts() -> None:
    assistant = {
        "role": "assistant",
        "content": "Paris.",
        "reasoning": "Recall. Check.",
        "reasoning_details": [
            {
                "type": "reasoning.text",
                "text": "Recall. Check.",
                "data": {"google.thought_signature": SIG_THOUGHT},
            },
            {"type": "reasoning.text", "text": "Elsewhere.", "data": {"anthropic.signature": "x"}},
        ],
    }
    body = request_body(ask(USER, assistant, {"role": "user", "content": "And Italy?"}), offering())
    assert body["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Recall. Check.", "thought": True, "thoughtSignature": SIG_THOUGHT},
            {"text": "Paris."},
        ],
    }


def test_a_text_signature_goes_back_on_the_text_and_not_as_a_thought() -> None:
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Paris"}, {"type": "text", "text": " it is."}],
        "reasoning_details": [
            {"type": "reasoning.encrypted", "data": {"google.thought_signature": SIG_TEXT}},
            {"type": "reasoning.encrypted", "data": {"anthropic.redacted_thinking": "x"}},
        ],
    }
    body = request_body(ask(USER, assistant, {"role": "user", "content": "And Italy?"}), offering())
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Paris"}, {"text": " it is.", "thoughtSignature": SIG_TEXT}],
    }


def test_a_tool_call_made_elsewhere_gets_the_documented_skip_signature() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    tool = {"role": "tool", "tool_call_id": "c", "content": "[1, 2]"}
    body = request_body(ask(USER, assistant, tool), offering())
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "f", "args": {}},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"result": [1, 2]}}}],
        },
    ]


def test_a_file_id_cannot_be_carried() -> None:
    message = {"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}
    with pytest.raises(CannotCarry):
        request_body(ask(message), offering())


# Plain answers


def test_thoughts_and_text_come_back_as_reasoning_and_content() -> None:
    reply = reply_of((FIXTURES / "reply_thoughts_text.json").read_bytes())
    thought = "**Recalling capitals**\nParis is the capital. Double-checking."
    assert reply.body["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Paris is the capital of France.",
                "reasoning": thought,
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": thought,
                        "data": {"google.thought_signature": SIG_THOUGHT},
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "stop",
            "native_finish_reason": "STOP",
        }
    ]
    assert reply.body["object"] == "chat.completion"
    assert isinstance(reply.body["created"], int)


def test_a_signed_text_comes_back_as_an_encrypted_reasoning_detail() -> None:
    answer = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "Paris."}, {"text": "", "thoughtSignature": SIG_TEXT}],
                },
                "finishReason": "STOP",
            }
        ]
    }
    reply = reply_of(orjson.dumps(answer))
    assert reply.body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "Paris.",
        "reasoning_details": [
            {"type": "reasoning.encrypted", "data": {"google.thought_signature": SIG_TEXT}}
        ],
    }


def test_a_streamed_text_signature_follows_its_text() -> None:
    translator = GeminiStream()
    part = {"text": "Paris.", "thoughtSignature": SIG_TEXT}
    event = {"candidates": [{"content": {"role": "model", "parts": [part]}}]}
    chunks = translator.feed(Event(orjson.dumps(event).decode()))
    signed = {"type": "reasoning.encrypted", "data": {"google.thought_signature": SIG_TEXT}}
    assert chunks == [
        chunk(0, {"role": "assistant", "content": ""}),
        chunk(0, {"content": "Paris."}),
        chunk(0, {"reasoning_details": [signed]}),
    ]


def test_usage_counts_cache_reads_in_the_prompt_and_thoughts_in_the_completion() -> None:
    reply = reply_of((FIXTURES / "reply_thoughts_text.json").read_bytes())
    assert reply.usage == Usage(
        prompt_tokens=120, completion_tokens=49, cached_tokens=100, reasoning_tokens=40
    )
    assert reply.body["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 49,
        "total_tokens": 169,
        "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 40},
    }


def test_function_calls_come_back_whole_with_their_signature() -> None:
    reply = reply_of((FIXTURES / "reply_tool_calls.json").read_bytes())
    assert reply.body["choices"][0]["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                "extra_content": {"google": {"thought_signature": SIG_CALL}},
            },
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_time", "arguments": '{"zone":"CET"}'},
            },
        ],
    }
    assert (reply.finish_reason, reply.native_finish_reason) == ("tool_calls", "STOP")


def test_a_tool_call_answer_sent_back_replays_what_gemini_answered() -> None:
    reply = reply_of((FIXTURES / "reply_tool_calls.json").read_bytes())
    assistant = reply.body["choices"][0]["message"]
    tools = [
        {"role": "tool", "tool_call_id": "call_0", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "call_1", "content": "14:02"},
    ]
    body = request_body(ask(USER, assistant, *tools), offering())
    recorded = orjson.loads((FIXTURES / "reply_tool_calls.json").read_bytes())
    assert body["contents"][1] == recorded["candidates"][0]["content"]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"temp": 21}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "14:02"}}},
    ]
    assert invalid(body, "gemini-3-pro-preview") is None


def test_two_candidates_are_two_choices_with_logprobs() -> None:
    reply = reply_of((FIXTURES / "reply_two_candidates.json").read_bytes())
    first, second = reply.body["choices"]
    assert first == {
        "index": 0,
        "message": {"role": "assistant", "content": "Paris."},
        "logprobs": {
            "content": [
                {
                    "token": "Paris",
                    "logprob": -0.05,
                    "bytes": [80, 97, 114, 105, 115],
                    "top_logprobs": [
                        {"token": "Paris", "logprob": -0.05, "bytes": [80, 97, 114, 105, 115]},
                        {"token": "Lyon", "logprob": -3.5, "bytes": [76, 121, 111, 110]},
                    ],
                },
                {
                    "token": ".",
                    "logprob": -0.01,
                    "bytes": [46],
                    "top_logprobs": [{"token": ".", "logprob": -0.01, "bytes": [46]}],
                },
            ]
        },
        "finish_reason": "stop",
        "native_finish_reason": "STOP",
    }
    assert second == {
        "index": 1,
        "message": {"role": "assistant", "content": "It is Paris, and then some"},
        "logprobs": None,
        "finish_reason": "length",
        "native_finish_reason": "MAX_TOKENS",
    }


@pytest.mark.parametrize(
    ("native", "reason"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("IMAGE_SAFETY", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "stop"),
        ("OTHER", "stop"),
    ],
)
def test_finish_reasons_map_with_the_native_one_kept(native: str, reason: str) -> None:
    answer = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": native}]}
    reply = reply_of(orjson.dumps(answer))
    assert reply.body["choices"][0]["finish_reason"] == reason
    assert (reply.finish_reason, reply.native_finish_reason) == (reason, native)


def test_a_blocked_prompt_is_an_empty_filtered_choice() -> None:
    reply = reply_of((FIXTURES / "reply_blocked.json").read_bytes())
    assert reply.body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": "content_filter",
            "native_finish_reason": "PROMPT_BLOCKED",
        }
    ]
    assert reply.usage == Usage(prompt_tokens=12)


# Streams


def test_a_stream_names_the_assistant_then_reasoning_text_and_calls() -> None:
    chunks, translator = streamed("stream_thoughts_text_calls.sse")
    detail = {
        "type": "reasoning.text",
        "text": "Looking up the weather.",
        "data": {"google.thought_signature": SIG_THOUGHT},
    }
    weather = {
        "index": 0,
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        "extra_content": {"google": {"thought_signature": SIG_CALL}},
    }
    time_call = {
        "index": 1,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_time", "arguments": "{}"},
    }
    usage = Usage(prompt_tokens=30, completion_tokens=37, cached_tokens=10, reasoning_tokens=12)
    assert chunks == [
        chunk(0, {"role": "assistant", "content": ""}),
        chunk(0, {"reasoning": "Looking up"}),
        chunk(0, {"reasoning": " the weather."}),
        chunk(0, {"reasoning_details": [detail]}),
        chunk(0, {"content": "Let me check."}),
        chunk(0, {"tool_calls": [weather]}),
        chunk(0, {"tool_calls": [time_call]}),
        chunk(0, {}, "tool_calls"),
        {**chunk(0, {}), "choices": [], "usage": usage.as_openai()},
    ]
    state = translator.state
    assert (state.usage, state.finish_reason, state.native_finish_reason) == (
        usage,
        "tool_calls",
        "STOP",
    )
    assert state.finished


def test_a_stream_error_event_fails_the_stream() -> None:
    with pytest.raises(StreamFailed) as raised:
        streamed("stream_error.sse")
    failure = raised.value.failure
    assert (failure.status, failure.message) == (
        503,
        "The model is overloaded. Please try again later.",
    )
    assert failure.error == {
        "message": "The model is overloaded. Please try again later.",
        "type": "server_error",
        "param": None,
        "code": "UNAVAILABLE",
    }


def test_a_stream_that_ends_without_a_finish_reason_is_unfinished() -> None:
    translator = GeminiStream()
    event = b'data: {"candidates": [{"content": {"parts": [{"text": "Par"}]}}]}\r\n\r\n'
    for e in Decoder().feed(event):
        translator.feed(e)
    assert translator.close() == []
    assert not translator.state.finished


# Errors


def test_an_invalid_argument_is_openais_invalid_request_error() -> None:
    failure = failure_of(400, (FIXTURES / "error_invalid_argument.json").read_bytes())
    message = (
        "Invalid JSON payload received. Unknown name \"temprature\" at 'generation_config': "
        "Cannot find field."
    )
    assert (failure.status, failure.message) == (400, message)
    assert failure.error == {
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": "INVALID_ARGUMENT",
    }


@pytest.mark.parametrize(
    ("status", "name", "kind"),
    [
        (400, "FAILED_PRECONDITION", "invalid_request_error"),
        (401, "UNAUTHENTICATED", "authentication_error"),
        (403, "PERMISSION_DENIED", "permission_error"),
        (429, "RESOURCE_EXHAUSTED", "rate_limit_error"),
        (500, "INTERNAL", "server_error"),
        (503, "UNAVAILABLE", "server_error"),
    ],
)
def test_googles_statuses_map_to_openais_types(status: int, name: str, kind: str) -> None:
    data = orjson.dumps([{"error": {"code": status, "message": "m", "status": name}}])
    failure = failure_of(status, data)
    assert failure.error == {"message": "m", "type": kind, "param": None, "code": name}


def test_a_body_that_is_not_googles_error_is_a_bare_failure() -> None:
    failure = failure_of(502, b"<html>Bad Gateway</html>")
    assert (failure.status, failure.message, failure.error) == (502, "HTTP 502", None)


# The fake's idea of valid is the SDK's


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            {"contents": ASKED_HI, "generationConfig": {"temprature": 1}},
            "Invalid JSON payload received. Invalid value at 'generationConfig.temprature': "
            "Extra inputs are not permitted",
        ),
        (
            {"contents": ASKED_HI, "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}},
            "Invalid value at 'toolConfig': SOMETIMES is not a valid FunctionCallingConfigMode",
        ),
        (
            {"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]},
            "Please use a valid role: user, model.",
        ),
        (
            {"contents": ASKED_HI, "user": "u-1"},
            'Invalid JSON payload received. Unknown name "user": Cannot find field.',
        ),
        ({"contents": []}, "* GenerateContentRequest.contents: contents is not specified"),
    ],
)
def test_the_fake_rejects_what_the_sdk_types_reject(body: dict[str, Any], problem: str) -> None:
    assert invalid(body, "gemini-2.5-flash") == problem


def test_the_fake_asks_gemini_3_for_the_signature_of_the_current_turns_calls() -> None:
    call = {"functionCall": {"name": "f", "args": {}}}
    answer = {"functionResponse": {"name": "f", "response": {"result": 1}}}
    contents = [*ASKED_HI, {"role": "model", "parts": [call]}, {"role": "user", "parts": [answer]}]
    assert invalid({"contents": contents}, "gemini-2.5-flash") is None
    assert (invalid({"contents": contents}, "gemini-3-pro-preview") or "").startswith(
        "Function call is missing a thought_signature in functionCall parts."
    )
