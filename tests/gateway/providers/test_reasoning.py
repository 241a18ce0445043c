"""Reasoning on the way, pure: what a call asks of it, the effort a model takes, reasoning
sent back moved into the field a provider reads, reasoning answered returned as
`reasoning`."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.providers.contract import ReasoningAsk
from gateway.providers.reasoning import (
    BadReasoning,
    answered_reasoning,
    effort_for,
    effort_of,
    move_reasoning_back,
    reasoning_asked,
)

GPT5 = ("minimal", "low", "medium", "high")
AZURE_EU = ("low", "medium", "high")


@pytest.mark.parametrize(
    ("asked", "takes", "expected"),
    [
        ("medium", GPT5, "medium"),
        ("none", GPT5, "minimal"),
        ("minimal", AZURE_EU, "low"),
        ("low", ("high",), "high"),
        ("xhigh", GPT5, "high"),
        ("high", ("low",), "low"),
        ("medium", ("high", "low"), "high"),
        ("none", ("none", "high"), "none"),
    ],
)
def test_the_effort_is_the_one_asked_or_the_nearest_deeper(
    asked: str, takes: tuple[str, ...], expected: str
) -> None:
    assert effort_for(asked, takes) == expected


def test_a_model_that_takes_no_effort_gets_none() -> None:
    assert effort_for("high", ()) is None


def test_an_effort_momor_does_not_know_goes_as_written() -> None:
    assert effort_for("turbo", GPT5) == "turbo"
    assert effort_for(3, GPT5) is None


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning_text", "thinking"])
def test_answered_reasoning_comes_back_as_reasoning(field: str) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": "42", field: "hmm"}
    answered_reasoning(message)
    assert message == {"role": "assistant", "content": "42", "reasoning": "hmm"}


def test_answered_reasoning_keeps_a_reasoning_already_there() -> None:
    message: dict[str, Any] = {"content": "42", "reasoning": "a", "reasoning_content": "b"}
    answered_reasoning(message)
    assert message == {"content": "42", "reasoning": "a"}


def test_think_in_content_is_left_alone() -> None:
    message: dict[str, Any] = {"content": "<think>x</think>y"}
    answered_reasoning(message)
    assert message == {"content": "<think>x</think>y"}


def test_mistral_thinking_chunks_become_reasoning_and_text() -> None:
    message: dict[str, Any] = {
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "think"}]},
            {"type": "text", "text": "answer"},
        ]
    }
    answered_reasoning(message)
    assert message == {"content": "answer", "reasoning": "think"}


ASSISTANT = {"role": "assistant", "content": "a", "reasoning": "r", "reasoning_details": [{}]}


def test_reasoning_sent_back_moves_into_the_field_the_provider_reads() -> None:
    messages = [{"role": "user", "content": "q"}, ASSISTANT]
    assert move_reasoning_back(messages, "reasoning_content") == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "r"},
    ]
    assert ASSISTANT["reasoning"] == "r"  # the caller's message is not changed


def test_reasoning_sent_back_is_dropped_where_no_field_reads_it() -> None:
    assert move_reasoning_back([ASSISTANT], None) == [{"role": "assistant", "content": "a"}]


def test_a_conversation_without_reasoning_is_the_same_list() -> None:
    messages = [{"role": "user", "content": "q"}]
    assert move_reasoning_back(messages, "reasoning_content") is messages


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, None),
        ({"reasoning": None}, None),
        ({"reasoning": {}}, None),
        ({"reasoning": {"exclude": False}}, None),
        ({"include_reasoning": True}, None),
        ({"reasoning_effort": "low"}, ReasoningAsk("low")),
        ({"reasoning": {"effort": "high"}, "reasoning_effort": "low"}, ReasoningAsk("high")),
        ({"reasoning": {"max_tokens": 2000}}, ReasoningAsk(max_tokens=2000)),
        ({"reasoning": {"enabled": True}}, ReasoningAsk("medium")),
        ({"reasoning": {"enabled": False, "max_tokens": 9}}, ReasoningAsk("none")),
        ({"reasoning": {"exclude": True}}, ReasoningAsk(exclude=True)),
        ({"include_reasoning": False}, ReasoningAsk(exclude=True)),
        ({"reasoning": {"exclude": False}, "include_reasoning": False}, None),
    ],
)
def test_the_reasoning_asked_reads_the_object_and_its_aliases(
    body: dict[str, Any], expected: ReasoningAsk | None
) -> None:
    assert reasoning_asked(body) == expected


@pytest.mark.parametrize(
    ("ask", "thinks"),
    [
        (ReasoningAsk("none"), False),
        (ReasoningAsk(exclude=True), False),
        (ReasoningAsk("minimal"), True),
        (ReasoningAsk(max_tokens=1), True),
    ],
)
def test_exclude_alone_or_effort_none_asks_for_no_thinking(ask: ReasoningAsk, thinks: bool) -> None:
    assert ask.thinks is thinks


@pytest.mark.parametrize(
    ("budget", "effort"),
    [(1, "minimal"), (1023, "minimal"), (1024, "low"), (4096, "medium"), (16384, "high"),
     (32768, "xhigh")],
)  # fmt: skip
def test_a_budget_stands_for_the_deepest_effort_it_reaches(budget: int, effort: str) -> None:
    assert effort_of(ReasoningAsk(max_tokens=budget)) == effort


def test_an_unreadable_reasoning_field_is_named() -> None:
    with pytest.raises(BadReasoning) as raised:
        reasoning_asked({"reasoning": {"effort": "turbo"}})
    assert raised.value.field == "reasoning.effort"
