"""The answer rules, pure: tool rules read from a call and held against answers and chunks,
a stream's calls held back under a rule on their number, excluded reasoning taken out."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.providers.contract import (
    ChatCompletionChunk,
    Event,
    StreamFailed,
    StreamTranslator,
)
from gateway.request.answer_rules import AnswerRules, RuleBroken, read_answer_rules
from gateway.request.errors import GatewayError
from gateway.request.tool_rules import ToolRules, tool_rules


class Scripted(StreamTranslator):
    """A translator whose every event's data names the chunks it makes."""

    def __init__(self, chunks: dict[str, list[Any]]) -> None:
        super().__init__()
        self.chunks = chunks

    def feed(self, event: Event) -> list[ChatCompletionChunk]:
        return list(self.chunks[event.data])


HONOURED = {"provider": {"require_parameters": True}}


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> Any:
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def call(index: int | None, name: str | None = None, call_id: str | None = None) -> Any:
    found: dict[str, Any] = {"function": {"arguments": "{}"}}
    if index is not None:
        found["index"] = index
    if name is not None:
        found["function"]["name"] = name
    if call_id is not None:
        found["id"] = call_id
    return chunk({"tool_calls": [found]})


def fed(rules: AnswerRules, chunks: dict[str, list[Any]]) -> list[Any]:
    held = rules.stream(Scripted(chunks))
    out = [c for data in chunks for c in held.feed(Event(data))]
    return out + held.close()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, None),
        ({"tool_choice": "auto", "parallel_tool_calls": True}, None),
        ({"tool_choice": {"type": "allowed_tools"}}, None),
        ({"max_tool_calls": 3}, ToolRules(most=3)),
        ({"parallel_tool_calls": False}, None),
        ({"tool_choice": "required", "max_tool_calls": 2}, ToolRules(most=2)),
        ({"parallel_tool_calls": False, **HONOURED}, ToolRules(single=True)),
        ({"tool_choice": "none", **HONOURED}, ToolRules(none=True)),
        ({"tool_choice": "required", **HONOURED}, ToolRules(required=True)),
        (
            {"tool_choice": {"type": "function", "function": {"name": "f"}}, **HONOURED},
            ToolRules(required=True, named="f"),
        ),
        ({"tool_choice": "required", "provider": {"require_parameters": False}}, None),
    ],
)
def test_the_rules_a_call_sets(body: dict[str, Any], expected: ToolRules | None) -> None:
    assert tool_rules(body) == expected


def test_an_unreadable_max_tool_calls_is_a_400() -> None:
    with pytest.raises(GatewayError) as raised:
        tool_rules({"max_tool_calls": 2000})
    assert (raised.value.status, raised.value.code) == (400, "invalid_value")


def test_a_call_without_rules_has_none() -> None:
    assert read_answer_rules({"model": "x", "reasoning": {"effort": "high"}}) is None


def test_calls_without_an_index_are_told_apart_by_id() -> None:
    rules = AnswerRules(ToolRules(most=1))
    chunks = {"a": [call(None, "f", "c1")], "b": [call(None, None, "c2")]}

    with pytest.raises(StreamFailed) as raised:
        fed(rules, chunks)
    assert "max_tool_calls" in raised.value.failure.message


def test_continuation_deltas_of_one_call_count_once() -> None:
    rules = AnswerRules(ToolRules(single=True))
    chunks = {"a": [call(0, "f", "c1")], "b": [call(0)], "c": [chunk({}, "tool_calls")]}

    assert len(fed(rules, chunks)) == 3


def test_required_is_checked_per_choice_when_it_finishes() -> None:
    rules = AnswerRules(ToolRules(required=True))
    chunks = {
        "a": [call(0, "f", "c1")],
        "b": [chunk({}, "tool_calls")],
        "c": [chunk({}, "stop", index=1)],
    }

    with pytest.raises(StreamFailed) as raised:
        fed(rules, chunks)
    assert raised.value.failure.message.endswith("it called no tool, and tool_choice requires one.")


def test_calls_are_held_until_the_answer_finishes_under_a_count_rule() -> None:
    rules = AnswerRules(ToolRules(most=2))
    script = {
        "text": [chunk({"content": "a"})],
        "call": [call(0, "f")],
        "end": [chunk({}, "tool_calls")],
    }
    held = rules.stream(Scripted(script))

    assert held.feed(Event("text")) == [chunk({"content": "a"})]
    assert held.feed(Event("call")) == []
    assert held.feed(Event("end")) == [call(0, "f"), chunk({}, "tool_calls")]


def test_calls_held_when_the_stream_ends_without_a_finish_are_released_on_close() -> None:
    rules = AnswerRules(ToolRules(single=True))

    assert fed(rules, {"call": [call(0, "f")]}) == [call(0, "f")]


def test_a_named_rule_holds_nothing_back() -> None:
    rules = AnswerRules(ToolRules(required=True, named="f"))
    held = rules.stream(Scripted({"call": [call(0, "f")]}))

    assert held.feed(Event("call")) == [call(0, "f")]


def test_excluded_reasoning_leaves_no_empty_chunk() -> None:
    rules = AnswerRules(exclude_reasoning=True)
    chunks = {
        "thought": [chunk({"reasoning": "hm"})],
        "detail": [chunk({"reasoning_details": [{"type": "reasoning.text"}]})],
        "both": [chunk({"reasoning": "hm", "content": "Paris."})],
        "role": [chunk({"role": "assistant", "content": ""})],
        "end": [chunk({"reasoning": "x"}, "stop")],
    }

    assert fed(rules, chunks) == [
        chunk({"content": "Paris."}),
        chunk({"role": "assistant", "content": ""}),
        chunk({}, "stop"),
    ]


def test_a_plain_answer_keeps_its_usage_without_its_reasoning() -> None:
    message = {"role": "assistant", "content": "Paris.", "reasoning": "hm", "reasoning_details": []}
    usage = {"completion_tokens_details": {"reasoning_tokens": 7}}
    body: Any = {"choices": [{"index": 0, "message": message}], "usage": usage}

    AnswerRules(exclude_reasoning=True).hold(body)

    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Paris."}
    assert body["usage"] == usage


def test_a_plain_answer_breaking_a_rule_raises_with_the_reason() -> None:
    calls = [{"id": "c", "type": "function", "function": {"name": "g", "arguments": "{}"}}]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    body: Any = {"choices": [{"index": 0, "message": message}]}

    with pytest.raises(RuleBroken) as raised:
        AnswerRules(ToolRules(required=True, named="f")).hold(body)
    assert raised.value.failure.status == 502
    assert raised.value.failure.message == (
        "The answer broke the call's tool rules: it called g, and tool_choice names f."
    )
