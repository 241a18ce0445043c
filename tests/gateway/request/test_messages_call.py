"""A Messages body read once, pure: Anthropic's refusals of its shape (400, worded as Anthropic
words them), Momor's routing fields read and kept out of what goes to Anthropic, and the
translation into the Chat Completions request every other offering is sent, with what it
cannot carry named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.request.errors import GatewayError
from gateway.request.messages.call import MessagesCall, parse_count_call, parse_messages_call
from gateway.request.messages.to_chat import chat_request

PLACES = frozenset({"openai", "anthropic"})
HI = [{"role": "user", "content": "hi"}]
SIGNED = {"type": "thinking", "thinking": "Think.", "signature": "sig-1"}


def parsed(body: dict[str, Any], headers: dict[str, str] | None = None) -> MessagesCall:
    return parse_messages_call(body, json.dumps(body).encode(), PLACES, headers or {})


def ask(**fields: Any) -> dict[str, Any]:
    return {"model": "anthropic/claude", "max_tokens": 100, "messages": HI, **fields}


def refusal(body: dict[str, Any]) -> str:
    with pytest.raises(GatewayError) as caught:
        parsed(body)
    assert (caught.value.status, caught.value.type) == (400, "invalid_request_error")
    return caught.value.message


# The call


def test_routing_fields_are_read_and_kept_out_of_the_native_body() -> None:
    body = ask(
        models=["acme/omni"],
        provider={"order": ["anthropic"]},
        session_id="s-1",
        max_tool_calls=2,
        system="Be brief.",
        metadata={"user_id": "u-1"},
    )
    call = parsed(body, {"anthropic-beta": "b-1,b-2", "anthropic-version": "2023-06-01"})
    assert call.api == "messages" and call.kind == "chat"
    assert call.options.selectors == ("anthropic/claude", "acme/omni")
    assert call.options.prefs.order == ("anthropic",)
    assert call.tags.session_id == "s-1"
    assert call.native == {
        "max_tokens": 100,
        "messages": HI,
        "system": "Be brief.",
        "metadata": {"user_id": "u-1"},
    }
    assert call.forwarded == {"anthropic-beta": "b-1,b-2", "anthropic-version": "2023-06-01"}
    assert call.uncarried == ""
    assert call.size == len(json.dumps(body).encode())


def test_a_stream_asks_the_usage_of_a_translated_stream() -> None:
    call = parsed(ask(stream=True))
    assert call.options.stream and call.options.include_usage
    assert call.request["stream_options"] == {"include_usage": True}


def test_a_token_count_needs_no_max_tokens() -> None:
    body = {"model": "anthropic/claude", "messages": HI}
    call = parse_count_call(body, json.dumps(body).encode(), PLACES, {})
    assert call.native == {"messages": HI}
    assert "max_tokens" not in call.request


# Refusals


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m", "messages": HI}, "max_tokens: Field required"),
        (
            ask(max_tokens=0),
            "max_tokens: Input should be a whole number greater than or equal to 1",
        ),
        (
            ask(max_tokens=True),
            "max_tokens: Input should be a whole number greater than or equal to 1",
        ),
        ({"model": "m", "max_tokens": 1}, "messages: Field required"),
        (ask(messages=[]), "messages: at least one message is required"),
        (
            ask(messages=[{"role": "tool", "content": "x"}]),
            "messages.0.role: Input should be 'user', 'assistant' or 'system'",
        ),
        (
            ask(messages=[*HI, {"role": "system", "content": [{"type": "text"}]}]),
            "messages.1.content.0.text.text: Field required (str)",
        ),
        (
            ask(messages=[{"role": "user", "content": 3}]),
            "messages.0.content: Input should be a valid string or a list of content blocks",
        ),
        (
            ask(messages=[{"role": "user", "content": [{"text": "x"}]}]),
            "messages.0.content.0: Input should be a content block, an object with a 'type'",
        ),
        (
            ask(messages=[{"role": "user", "content": [{"type": "text"}]}]),
            "messages.0.content.0.text.text: Field required (str)",
        ),
        (
            ask(
                messages=[
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}
                ]
            ),
            "messages.0.content.0.tool_use.input: Field required (dict)",
        ),
        (
            ask(system=[{"type": "image"}]),
            "system: Input should be a valid string or a list of text blocks",
        ),
        (ask(tools=[{"description": "x"}]), "tools.0.name: Field required"),
        (
            ask(tools=[{"name": "f"}], tool_choice={"type": "some"}),
            "tool_choice: Input should be an object of type auto, any, tool or none",
        ),
        (
            ask(tools=[{"name": "f"}], tool_choice={"type": "tool"}),
            "tool_choice.tool.name: Field required",
        ),
        (ask(temperature="hot"), "temperature: Input should be a valid number"),
        (ask(top_k=1.5), "top_k: Input should be a valid integer"),
        (ask(stop_sequences="END"), "stop_sequences: Input should be a valid list of strings"),
        (
            ask(thinking={"type": "on"}),
            "thinking: Input should be an object of type enabled, disabled or adaptive",
        ),
        (
            ask(thinking={"type": "enabled", "budget_tokens": 100}),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            ask(max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 2000}),
            "`max_tokens` must be greater than `thinking.budget_tokens`.",
        ),
        (ask(metadata="u"), "metadata: Input should be a valid dictionary"),
        (ask(stream="yes"), "stream: Input should be a valid boolean"),
        ({"max_tokens": 1, "messages": HI}, "The call names no model: set 'model' (or 'models')."),
    ],
)
def test_a_body_anthropic_refuses_is_refused(body: dict[str, Any], message: str) -> None:
    assert refusal(body) == message


# The translation


def translated(**fields: Any) -> dict[str, Any]:
    body = {"max_tokens": 100, "messages": HI, **fields}
    return chat_request(body).request


def test_system_and_sampling_fields() -> None:
    assert translated(
        system=[{"type": "text", "text": "One.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Two."}],
        temperature=0.5, top_p=0.9, top_k=40, stop_sequences=["END"],
        metadata={"user_id": "u-1"}, service_tier="standard_only",
    ) == {
        "messages": [{"role": "system", "content": "One.\nTwo."}, *HI],
        "max_tokens": 100, "temperature": 0.5, "top_p": 0.9, "stop": ["END"],
        "user": "u-1", "service_tier": "default",
    }  # fmt: skip


def test_user_blocks_become_parts_and_tool_results_tool_messages() -> None:
    image = {"type": "base64", "media_type": "image/png", "data": "iVBO"}
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}
    content = [
        {"type": "tool_result", "tool_use_id": "t1", "content": "22C"},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "a"},
                                                                  {"type": "text", "text": "b"}]},
        {"type": "text", "text": "Look:", "cache_control": {"type": "ephemeral"}},
        {"type": "image", "source": image},
        {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}},
        {"type": "document", "source": pdf, "title": "a.pdf"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "T"}},
    ]  # fmt: skip
    assert translated(messages=[{"role": "user", "content": content}])["messages"] == [
        {"role": "tool", "tool_call_id": "t1", "content": "22C"},
        {"role": "tool", "tool_call_id": "t2", "content": "a\nb"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
                {
                    "type": "file",
                    "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"},
                },
                {"type": "text", "text": "T"},
            ],
        },
    ]


def test_an_assistant_turn_keeps_its_thinking_text_and_tool_calls() -> None:
    content = [
        SIGNED,
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
    ]
    assert translated(messages=[*HI, {"role": "assistant", "content": content}])["messages"][1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
            }
        ],
        "reasoning_details": [
            {"type": "reasoning.text", "text": "Think.", "data": {"anthropic.signature": "sig-1"}},
            {"type": "reasoning.encrypted", "data": {"anthropic.redacted": "opaque"}},
        ],
    }


def test_a_deferred_tool_is_sent_once_a_tool_result_has_loaded_it() -> None:
    deferred = [{"name": n, "input_schema": {"type": "object"}, "defer_loading": True}
                for n in ("WebFetch", "Placeholder")]  # fmt: skip
    search = {"name": "ToolSearch", "input_schema": {"type": "object"}}
    call = {"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {"query": "web"}}
    loaded = {"type": "tool_result", "tool_use_id": "t1",
              "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]}  # fmt: skip
    before = translated(tools=[search, *deferred])
    assert [t["function"]["name"] for t in before["tools"]] == ["ToolSearch"]
    turns = [*HI, {"role": "assistant", "content": [call]}, {"role": "user", "content": [loaded]}]
    after = chat_request({"max_tokens": 10, "messages": turns, "tools": [search, *deferred]})
    assert after.uncarried == ""
    assert [t["function"]["name"] for t in after.request["tools"]] == ["ToolSearch", "WebFetch"]
    assert after.request["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "t1",
        "content": "WebFetch",
    }


def test_tools_and_tool_choice() -> None:
    tools = [{"name": "weather", "description": "The weather.", "input_schema": {"type": "object"},
              "cache_control": {"type": "ephemeral"}}]  # fmt: skip
    function = {
        "type": "function",
        "function": {"name": "weather", "parameters": {"type": "object"},
                     "description": "The weather."},
    }  # fmt: skip
    out = translated(tools=tools, tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert (out["tools"], out["tool_choice"], out["parallel_tool_calls"]) == (
        [function],
        "required",
        False,
    )
    named = translated(tools=tools, tool_choice={"type": "tool", "name": "weather"})
    assert named["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert translated(tools=tools, tool_choice={"type": "none"})["tool_choice"] == "none"


@pytest.mark.parametrize(
    ("fields", "reasoning"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, {"max_tokens": 2048}),
        ({"thinking": {"type": "disabled"}}, {"enabled": False}),
        (
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}},
            {"effort": "xhigh"},
        ),
        ({"output_config": {"effort": "low"}}, {"effort": "low"}),
        ({"thinking": {"type": "adaptive"}}, None),
    ],
)
def test_thinking_and_effort_as_reasoning(fields: dict[str, Any], reasoning: Any) -> None:
    assert translated(**fields).get("reasoning") == reasoning


def test_a_mid_conversation_system_turn_is_a_system_message_in_its_place() -> None:
    reminder = [{"type": "text", "text": "Mode: plan.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Be terse."}]  # fmt: skip
    messages = [
        *HI,
        {"role": "system", "content": reminder},
        {"role": "assistant", "content": "Ok."},
        {"role": "system", "content": "Done."},
    ]
    assert translated(messages=messages)["messages"] == [
        *HI,
        {"role": "system", "content": "Mode: plan.\nBe terse."},
        {"role": "assistant", "content": "Ok."},
        {"role": "system", "content": "Done."},
    ]


def test_a_system_turn_shown_until_the_next_user_message_is_left_off_after_it() -> None:
    once = {"role": "system", "content": "Only now.", "clear_at": "next_user_message"}
    later = [{"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Next."}]
    assert translated(messages=[*HI, once, *later])["messages"] == [*HI, *later]
    assert translated(messages=[*HI, once])["messages"] == [
        *HI,
        {"role": "system", "content": "Only now."},
    ]


def test_clearing_thinking_is_done_on_the_reasoning_replayed() -> None:
    def turn(text: str) -> dict[str, Any]:
        thought = {"type": "thinking", "thinking": f"On {text}.", "signature": "s"}
        return {"role": "assistant", "content": [thought, {"type": "text", "text": text}]}

    messages = [*HI, turn("One."), *HI, turn("Two."), *HI]

    def reasoned(keep: Any) -> list[str]:
        edit = {"type": "clear_thinking_20251015", "keep": keep}
        out = chat_request(
            {"max_tokens": 10, "messages": messages, "context_management": {"edits": [edit]}}
        )
        assert out.uncarried == ""
        return [m["content"] for m in out.request["messages"] if "reasoning_details" in m]

    assert reasoned("all") == reasoned({"type": "all"}) == ["One.", "Two."]
    assert reasoned({"type": "thinking_turns", "value": 1}) == ["Two."]
    assert reasoned({"type": "thinking_turns", "value": 0}) == []


def test_a_json_schema_output_as_response_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    out = translated(output_config={"format": {"type": "json_schema", "schema": schema}})
    assert out["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema},
    }


@pytest.mark.parametrize(
    ("fields", "uncarried"),
    [
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
         "Anthropic's web_search_20250305 tool"),
        ({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "file", "file_id": "f1"}}]}]}, "an image by file"),
        ({"messages": [{"role": "user", "content": [
            {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}]}]},
         "a document by url"),
        ({"messages": [{"role": "user", "content": [{"type": "search_result", "source": "s"}]}]},
         "a search_result block"),
        ({"container": "c-1"}, "'container'"),
        ({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
         "context_management's clear_tool_uses_20250919 edit"),
        ({"context_management": {"edits": [{"type": "clear_thinking_20251015",
                                            "keep": {"type": "turns"}}]}},
         "context_management's clear_thinking_20251015 edit"),
        ({"messages": [*HI, {"role": "system", "content": [
            {"type": "tool_removal", "tools": [{"type": "tool_reference", "name": "f"}]}]}]},
         "a tool_removal block"),
        ({"messages": [*HI, {"role": "system", "content": "Hurry.",
                             "output_config": {"effort": "low"}}]},
         "a system message's output_config"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
            "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}]}]},
         "a image block in a tool result or document"),
    ],
)  # fmt: skip
def test_what_chat_completions_cannot_carry_is_named(
    fields: dict[str, Any], uncarried: str
) -> None:
    assert chat_request({"max_tokens": 10, "messages": HI, **fields}).uncarried == uncarried
