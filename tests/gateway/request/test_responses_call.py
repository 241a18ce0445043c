"""parse_responses_call, pure: a Responses body read once into the call the layers below take
(the Chat Completions request for translated offerings, the body for OpenAI's own), its
routing fields read and kept from both, and what needs a stored response refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.request.errors import GatewayError
from gateway.request.responses import ResponsesCall, parse_responses_call

PLACES = frozenset({"openai", "mistral"})


def parsed(body: dict[str, Any], headers: dict[str, str] | None = None) -> ResponsesCall:
    return parse_responses_call(body, orjson.dumps(body), PLACES, headers or {})


def test_the_call_is_read_for_both_ways_and_momor_s_fields_stay_with_momor() -> None:
    body = {
        "model": "openai/gpt-5",
        "models": ["mistral/mistral-small"],
        "provider": {"order": ["openai"]},
        "session_id": "s-1",
        "input": "hi",
        "max_tool_calls": 2,
        "store": True,
        "include": ["reasoning.encrypted_content"],
    }
    call = parsed(body)
    assert call.api == "responses" and call.kind == "chat"
    assert call.options.selectors == ("openai/gpt-5", "mistral/mistral-small")
    assert call.options.prefs.order == ("openai",)
    assert call.tags.session_id == "s-1"
    assert call.native == {
        "input": "hi",
        "max_tool_calls": 2,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    assert call.request == {"messages": [{"role": "user", "content": "hi"}]}
    assert (call.encrypted, call.openai_only, call.options.stream) == (True, "", False)
    assert call.size == len(orjson.dumps(body))


def test_a_stream_always_carries_its_usage() -> None:
    call = parsed({"model": "openai/gpt-5", "input": "hi", "stream": True})
    assert (call.options.stream, call.options.include_usage) == (True, True)
    assert call.request["stream"] is True


def test_what_only_openai_carries_is_kept_on_the_call() -> None:
    call = parsed({"model": "openai/gpt-5", "input": "hi", "tools": [{"type": "file_search"}]})
    assert call.openai_only == "hosted tools (file_search)"
    assert call.native["tools"] == [{"type": "file_search"}]


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_not_found",
         "previous_response_id"),
        ({"conversation": {"id": "conv_1"}}, "invalid_value", "conversation"),
        ({"background": True}, "invalid_value", "background"),
        ({"input": [{"type": "function_call_output"}]}, "invalid_value", "input[0].call_id"),
        ({"model": 3}, "invalid_value", None),
    ],
)  # fmt: skip
def test_a_call_momor_cannot_serve_is_refused(
    body: dict[str, Any], code: str, param: str | None
) -> None:
    with pytest.raises(GatewayError) as caught:
        parsed({"model": "openai/gpt-5", "input": "hi", **body})
    assert (caught.value.status, caught.value.code, caught.value.param) == (400, code, param)
