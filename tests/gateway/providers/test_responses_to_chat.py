"""A Responses call as the Chat Completions request other offerings are sent, and as OpenAI's
own API is sent it: pure, field by field, with what only OpenAI can carry named."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.providers.responses.native import native_request, upstream_body
from gateway.providers.responses.to_chat import Unreadable, chat_request_of
from gateway.providers.responses.wire import momor_reasoning, read_momor_reasoning

DETAILS = [{"type": "reasoning.text", "text": "think", "signature": "sig-1", "format": "x"}]


def chat(**request: Any) -> dict[str, Any]:
    translated = chat_request_of(request)
    assert translated.openai_only == ""
    return translated.request


def test_a_string_input_is_one_user_message_after_the_instructions() -> None:
    assert chat(input="hi", instructions="Be brief.") == {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    }


def test_message_items_keep_their_roles_and_parts() -> None:
    items = [
        {"role": "developer", "content": "Rules."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look: "},
                {"type": "input_image", "image_url": "data:image/png;base64,AAA", "detail": "low"},
                {"type": "input_file", "file_data": "data:application/pdf;base64,BBB",
                 "filename": "a.pdf"},
            ],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "a"},
                                     {"type": "input_text", "text": "b"}]},
    ]  # fmt: skip
    assert chat(input=items)["messages"] == [
        {"role": "system", "content": "Rules."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look: "},
                {"type": "image_url",
                 "image_url": {"url": "data:image/png;base64,AAA", "detail": "low"}},
                {"type": "file",
                 "file": {"file_data": "data:application/pdf;base64,BBB", "filename": "a.pdf"}},
            ],
        },
        {"role": "user", "content": "ab"},
    ]  # fmt: skip


def test_a_function_call_round_trip_is_an_assistant_turn_and_a_tool_message() -> None:
    items = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-openai"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"type": "function_call", "call_id": "call_1", "name": "weather",
         "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_2", "name": "time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "noon"}]},
    ]  # fmt: skip
    assert chat(input=items)["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "time", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
    ]  # fmt: skip


AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [{"type": "function", "name": "spawn_agent", "description": "Spawn one.",
               "parameters": {"type": "object"}, "strict": False}],
}  # fmt: skip


def test_a_namespace_s_functions_are_functions_named_with_their_namespace() -> None:
    items = [
        {"role": "user", "content": "Spawn."},
        {"type": "function_call", "call_id": "call_1", "namespace": "multi_agent_v1",
         "name": "spawn_agent", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "spawned"},
    ]  # fmt: skip
    out = chat(input=items, tools=[AGENTS])
    assert out["tools"] == [
        {"type": "function", "function": {"name": "multi_agent_v1__spawn_agent",
         "description": "Spawn one.", "parameters": {"type": "object"}, "strict": False}},
    ]  # fmt: skip
    assert out["messages"][1]["tool_calls"] == [
        {"id": "call_1", "type": "function",
         "function": {"name": "multi_agent_v1__spawn_agent", "arguments": "{}"}},
    ]  # fmt: skip


def test_momor_reasoning_is_replayed_and_openai_reasoning_keeps_its_summary_alone() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [], "encrypted_content": momor_reasoning(DETAILS)},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "1"},
        {"type": "reasoning", "encrypted_content": "gAAAA-openai",
         "summary": [{"type": "summary_text", "text": "Thought."}]},
        {"role": "assistant", "content": "Done."},
    ]  # fmt: skip
    messages = chat(input=items)["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "reasoning_details": DETAILS,
    }
    assert messages[3] == {"role": "assistant", "content": "Done.", "reasoning": "Thought."}


def test_reasoning_alone_says_nothing() -> None:
    items = [{"role": "user", "content": "q"}, {"type": "reasoning", "summary": []}]
    assert chat(input=items)["messages"] == [{"role": "user", "content": "q"}]


def test_the_fields_are_translated() -> None:
    request = chat(
        input="hi",
        tools=[{"type": "function", "name": "f", "description": "d",
                "parameters": {"type": "object"}, "strict": True}],
        tool_choice={"type": "function", "name": "f"},
        text={"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"},
                         "strict": True}, "verbosity": "low"},
        reasoning={"effort": "high", "summary": "auto"},
        max_output_tokens=50, temperature=0.5, top_p=0.9, parallel_tool_calls=False,
        user="u", stream=True, store=False, include=["reasoning.encrypted_content"],
        metadata={"a": "b"}, truncation="auto", max_tool_calls=3,
    )  # fmt: skip
    del request["messages"]
    assert request == {
        "tools": [{"type": "function", "function": {
            "name": "f", "description": "d", "parameters": {"type": "object"}, "strict": True}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "s", "schema": {"type": "object"}, "strict": True}},
        "reasoning_effort": "high",
        "max_completion_tokens": 50,
        "temperature": 0.5, "top_p": 0.9, "parallel_tool_calls": False, "user": "u",
        "stream": True,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("value", "sent"),
    [("auto", "auto"), ("required", "required"), ("none", "none")],
)
def test_tool_choice_strings_pass(value: str, sent: str) -> None:
    assert chat(input="hi", tool_choice=value)["tool_choice"] == sent


def test_json_object_and_text_formats() -> None:
    assert chat(input="x", text={"format": {"type": "json_object"}})["response_format"] == {
        "type": "json_object"
    }
    assert "response_format" not in chat(input="x", text={"format": {"type": "text"}})


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        ({"tools": [{"type": "web_search"}]}, "hosted tools (web_search)"),
        ({"tool_choice": {"type": "file_search"}}, "a tool_choice of type file_search"),
        ({"input": [{"type": "web_search_call", "id": "ws"}]},
         "input items of type web_search_call"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
         "images given by file_id"),
        ({"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "u"}]}]},
         "files given by file_id or file_url"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt templates ('prompt')"),
        ({"tools": [{"type": "namespace", "name": "n",
                     "tools": [{"type": "custom", "name": "c"}]}]}, "hosted tools (custom)"),
    ],
)  # fmt: skip
def test_what_only_openai_carries_is_named(request_: dict[str, Any], reason: str) -> None:
    translated = chat_request_of({"input": "hi", **request_})
    assert translated.openai_only == reason


@pytest.mark.parametrize(
    ("request_", "param"),
    [
        ({}, "input"),
        ({"input": 3}, "input"),
        ({"input": []}, "input"),
        ({"input": ["hi"]}, "input[0]"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": 3}]}, "input[0].content"),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
         "input[0].call_id"),
        ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0].output"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
        ({"input": [{"type": "reasoning", "encrypted_content": "momor:%%%"}]},
         "input[0].encrypted_content"),
        ({"input": "x", "instructions": 3}, "instructions"),
        ({"input": "x", "tools": {}}, "tools"),
        ({"input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        ({"input": "x", "tools": [{"type": "namespace", "name": "n"}]}, "tools[0].tools"),
        ({"input": "x", "tools": [{"type": "namespace", "name": "n",
                                   "tools": [{"type": "function"}]}]}, "tools[0].tools[0].name"),
        ({"input": "x", "tool_choice": 3}, "tool_choice"),
        ({"input": "x", "text": {"format": {"type": "yaml"}}}, "text"),
        ({"input": "x", "reasoning": "high"}, "reasoning"),
    ],
)  # fmt: skip
def test_what_cannot_be_read_is_unreadable(request_: dict[str, Any], param: str) -> None:
    with pytest.raises(Unreadable) as caught:
        chat_request_of(request_)
    assert caught.value.param == param


def test_momor_reasoning_reads_back_and_openai_s_is_not_momor_s() -> None:
    assert read_momor_reasoning(momor_reasoning(DETAILS)) == DETAILS
    assert read_momor_reasoning("gAAAAB-openai") is None
    with pytest.raises(ValueError, match="not one Momor wrote"):
        read_momor_reasoning("momor:" + "bm90IGEgbGlzdA==")  # "not a list"


def test_openai_is_sent_the_call_as_written_but_store_and_momor_reasoning() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [], "encrypted_content": momor_reasoning(DETAILS)},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-openai"},
        {"type": "web_search_call", "id": "ws_1"},
    ]
    body = {"input": items, "tools": [{"type": "web_search"}], "store": True, "max_tool_calls": 2}
    native = native_request(body)
    assert native == {**body, "store": False, "input": [items[0], items[2], items[3]]}
    assert orjson.loads(upstream_body(native, "gpt-5")) == {**native, "model": "gpt-5"}
    assert body["store"] is True  # the call itself is left as it was
