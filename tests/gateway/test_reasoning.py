"""Reasoning on the way, pure: the effort a model takes, reasoning sent back moved into the
field a provider reads, reasoning answered returned as `reasoning`."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.providers.reasoning import answered_reasoning, effort_for, move_reasoning_back

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
