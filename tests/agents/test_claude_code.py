"""Claude Code (`claude -p`, the CLI from npm) headless against Momor's Messages route: asked
for the word in a file, it runs its Read tool when the scripted model calls it and answers
with what the model says once the file's content came back. Once on a model Anthropic serves
(the Messages call sent as written), once on one OpenAI serves (translated to Chat
Completions); every call recorded as a messages call and billed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.agents import (
    TEST_SECONDS,
    Run,
    Task,
    assert_priced,
    billed_records,
    run,
    tool_results,
    upstream_bodies,
)
from tests.agents.conftest import (
    ANTHROPIC_UPSTREAM,
    ON_ANTHROPIC,
    ON_OPENAI,
    OPENAI_UPSTREAM,
    PRICES,
)
from tests.gateway.conftest import World

pytestmark = pytest.mark.timeout(TEST_SECONDS)
SERVED = [(ON_ANTHROPIC, ANTHROPIC_UPSTREAM, "anthropic"), (ON_OPENAI, OPENAI_UPSTREAM, "openai")]


def claude_code(world: World, task: Task, model: str, home: Path) -> Run:
    """`claude -p` on `model` through the gateway with the org's key, in a home of its own,
    sending nothing anywhere else, allowed its Read tool without asking."""
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": world.url,
        "ANTHROPIC_AUTH_TOKEN": world.key,
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_SMALL_FAST_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    args = ["-p", task.prompt, "--output-format", "json", "--allowedTools", "Read"]
    return run("claude", args, env=env, cwd=task.work, fake=world.fake)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool.get("name") or tool["function"]["name"] for tool in body.get("tools", ())}


@pytest.mark.parametrize(("model", "upstream", "provider"), SERVED)
def test_claude_code_reads_the_file_with_its_tool_and_answers(
    world: World, tmp_path: Path, model: str, upstream: str, provider: str
) -> None:
    task = Task.make(tmp_path)
    read = {
        "id": "toolu_read",
        "name": "Read",
        "arguments": json.dumps({"file_path": str(task.file)}),
    }
    world.fake.script(upstream, tool_round_trip=True, tool_calls=[read], text=task.answer)

    done = claude_code(world, task, model, tmp_path / "home")

    assert done.status == 0, done.report
    result = json.loads(done.stdout)
    outcome = (result["result"], result["is_error"], result["num_turns"])
    assert outcome == (task.answer, False, 2), done.report
    bodies = upstream_bodies(world.fake, upstream)
    assert all("Read" in tool_names(body) for body in bodies), done.report
    answered = [results for body in bodies if (results := tool_results(body))]
    assert len(answered) == 1, done.report
    assert list(answered[0]) == ["toolu_read"], done.report
    assert f"The secret word is {task.word}." in answered[0]["toolu_read"], done.report

    records = billed_records(world)
    assert {r.api for r in records} == {"messages"}, records
    # Anthropic refuses what its model lacks (the fake's model: context editing, system turns
    # among the messages) and Claude Code asks again without it; those tries are failed records.
    served = [r for r in records if r.status == "success"]
    assert [(r.model, r.provider, r.streamed) for r in served] == [(model, provider, True)] * 2
    assert_priced(served, PRICES[model])


def test_claude_code_loads_a_deferred_tool_on_a_model_anthropic_does_not_serve(
    world: World, tmp_path: Path
) -> None:
    task = Task.make(tmp_path)
    search = {
        "id": "toolu_search",
        "name": "ToolSearch",
        "arguments": json.dumps({"query": "select:WebFetch"}),
    }
    world.fake.script(OPENAI_UPSTREAM, tool_round_trip=True, tool_calls=[search], text=task.answer)

    done = claude_code(world, task, ON_OPENAI, tmp_path / "home")

    assert done.status == 0, done.report
    assert json.loads(done.stdout)["result"] == task.answer, done.report
    first, then = upstream_bodies(world.fake, OPENAI_UPSTREAM)
    assert "WebFetch" not in tool_names(first), done.report
    assert "WebFetch" in tool_names(then), done.report
    assert tool_results(then) == {"toolu_search": "WebFetch"}, done.report
    records = billed_records(world)
    assert [(r.api, r.status) for r in records] == [("messages", "success")] * 2, done.report
