"""POST /v1/messages with what Claude Code sends beside a plain call, over HTTP: a
mid-conversation system turn (`role: system` among the messages), context editing that clears
thinking (`context_management`, beta `context-management-2025-06-27`), and deferred tools its
ToolSearch loads (`defer_loading`, `tool_reference`). Anthropic is sent them as written and
answers for them; a translated offering is sent the system turn as a system message in its
place, the edit done on what it is sent, and a deferred tool once a tool result loads it."""

from __future__ import annotations

from typing import Any

from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.edge.messages_world import (
    GPT5_ID,
    SONNET,
    SONNET_ID,
    claude,  # noqa: F401 - autouse
    error_of,
    post,
)

BETA = "context-management-2025-06-27"
REMINDER = [
    {"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Working directory: /tmp/work"},
]
ASKED: dict[str, Any] = {
    "max_tokens": 1000,
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is in secret.txt?"}]},
        {"role": "system", "content": REMINDER},
    ],
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
}


def test_a_translated_offering_is_sent_the_system_turn_in_its_place(world: World) -> None:
    world.fake.script("gpt-5", text="Looking.")
    response = post(world, {**ASKED, "model": GPT5_ID}, **{"anthropic-beta": BETA})
    assert response.status_code == 200, response.text
    assert response.json()["content"] == [{"type": "text", "text": "Looking."}]
    [sent] = world.fake.requests("gpt-5")
    assert sent["body"]["messages"] == [
        {"role": "user", "content": "What is in secret.txt?"},
        {"role": "system", "content": "# Environment\nWorking directory: /tmp/work"},
    ]
    assert "context_management" not in sent["body"]


def test_anthropic_is_sent_them_as_written_and_answers_for_them(world: World) -> None:
    response = post(world, {**ASKED, "model": SONNET_ID}, **{"anthropic-beta": BETA})
    [sent] = world.fake.requests(SONNET)
    assert sent["body"] == {**ASKED, "model": SONNET}
    assert sent["headers"]["anthropic-beta"] == BETA
    # The fake stands for a model without context editing: its refusal is the answer.
    assert error_of(response, 400, "invalid_request_error") == (
        "context_management: Extra inputs are not permitted"
    )


def test_an_edit_a_translated_offering_cannot_make_leaves_the_call_to_anthropic(
    world: World,
) -> None:
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    body = {**ASKED, "model": GPT5_ID, "context_management": edits}
    message = error_of(post(world, body), 422, "invalid_request_error")
    assert "context_management's clear_tool_uses_20250919 edit" in message
    assert world.fake.requests("gpt-5") == []


def test_a_translated_offering_is_sent_a_deferred_tool_once_it_is_loaded(world: World) -> None:
    world.fake.script("gpt-5", text="Fetching.")
    schema = {"type": "object"}
    tools = [
        {"name": "ToolSearch", "input_schema": schema},
        {"name": "WebFetch", "input_schema": schema, "defer_loading": True},
        {"name": "DeferredToolPlaceholder", "input_schema": schema, "defer_loading": True},
    ]
    search = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch",
              "input": {"query": "select:WebFetch"}}  # fmt: skip
    loaded = {"type": "tool_result", "tool_use_id": "toolu_1",
              "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]}  # fmt: skip
    messages = [
        {"role": "user", "content": "Fetch the page."},
        {"role": "assistant", "content": [search]},
        {"role": "user", "content": [loaded, {"type": "text", "text": "Tool loaded."}]},
    ]
    body = {"model": GPT5_ID, "max_tokens": 100, "messages": messages, "tools": tools}
    response = post(world, body, **{"anthropic-beta": "advanced-tool-use-2025-11-20"})
    assert response.status_code == 200, response.text
    [sent] = world.fake.requests("gpt-5")
    assert [t["function"]["name"] for t in sent["body"]["tools"]] == ["ToolSearch", "WebFetch"]
    assert sent["body"]["messages"][2:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "WebFetch"},
        {"role": "user", "content": "Tool loaded."},
    ]
