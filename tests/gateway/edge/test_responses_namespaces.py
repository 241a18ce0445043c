"""POST /v1/responses with a namespace tool (function tools grouped under a name, as Codex CLI
sends its sub-agent tools) on an offering that speaks Chat Completions alone (Mistral), over
HTTP with OpenAI's SDK: the namespace's functions are sent as functions named with their
namespace, a call to one comes back as a `function_call` naming its namespace, plain and
streamed, and goes back up named as it was sent."""

from __future__ import annotations

from typing import Any

from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.edge.test_responses import client, streamed
from tests.gateway.edge.test_responses_translated import MODEL, UPSTREAM, sent

AGENTS: Any = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}},
        {"type": "function", "name": "close_agent", "parameters": {"type": "object"}},
    ],
}
SPAWN = {"id": "call_1", "name": "multi_agent_v1__spawn_agent", "arguments": '{"task":"x"}'}


def test_a_namespace_s_functions_go_as_functions_and_come_back_named(world: World) -> None:
    world.fake.script(UPSTREAM, tool_calls=[SPAWN])
    first = client(world).responses.create(model=MODEL, input="Spawn one.", tools=[AGENTS])
    assert [f["function"]["name"] for f in sent(world)["tools"]] == [
        "multi_agent_v1__spawn_agent",
        "multi_agent_v1__close_agent",
    ]
    [call] = first.output
    assert call.type == "function_call"
    assert (call.namespace, call.name, call.arguments) == (
        "multi_agent_v1",
        "spawn_agent",
        '{"task":"x"}',
    )

    world.fake.reset()
    world.fake.script(UPSTREAM, text="Spawned.")
    items: Any = [
        {"role": "user", "content": "Spawn one."},
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": "call_1", "output": "agent-1"},
    ]
    second = client(world).responses.create(model=MODEL, input=items, tools=[AGENTS])
    assert second.output_text == "Spawned."
    function = {"name": "multi_agent_v1__spawn_agent", "arguments": '{"task":"x"}'}
    assert sent(world)["messages"][1]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": function}
    ]


def test_a_streamed_call_to_a_namespace_s_function_names_it(world: World) -> None:
    world.fake.script(UPSTREAM, tool_calls=[SPAWN])
    _, events = streamed(world, {"model": MODEL, "input": "Spawn one.", "tools": [AGENTS]})
    added = next(data for name, data in events if name == "response.output_item.added")
    [done] = next(data for name, data in events if name == "response.completed")["response"][
        "output"
    ]
    for item in (added["item"], done):
        assert (item["type"], item["namespace"], item["name"]) == (
            "function_call",
            "multi_agent_v1",
            "spawn_agent",
        )
    assert done["arguments"] == '{"task":"x"}'
