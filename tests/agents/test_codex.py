"""Codex CLI (`codex exec`, the CLI from npm) headless against Momor's Responses route, as a
custom model provider of its `config.toml`: asked for the word in a file, it runs the shell
command the scripted model calls for (thinking first) and answers with what the model says once
the command's output came back. Once on a model OpenAI serves (the Responses call sent as
written), once on one Anthropic serves (translated, through Chat Completions, to Anthropic's
Messages): either way the model's reasoning goes back to it as its provider wrote it, OpenAI's
encrypted, Anthropic's signed; every call recorded as a responses call and billed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testkit.fake_anthropic import fake_signature
from testkit.fake_responses import ENCRYPTED
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
SERVED = [(ON_OPENAI, OPENAI_UPSTREAM, "openai"), (ON_ANTHROPIC, ANTHROPIC_UPSTREAM, "anthropic")]
THOUGHT = "The word must be in the file."
# What proves the reasoning the model's own when it comes back: its provider's seal.
SEALS = {"openai": ENCRYPTED, "anthropic": fake_signature(THOUGHT)}
CONFIG = """\
model = "{model}"
model_provider = "momor"
{search}

[model_providers.momor]
name = "Momor"
base_url = "{url}/v1"
env_key = "MOMOR_KEY"
wire_api = "responses"

# Nothing sent anywhere but Momor: no plugin sync from GitHub, no analytics.
[features]
plugins = false
remote_plugin = false

[analytics]
enabled = false
"""


def codex(world: World, task: Task, model: str, home: Path) -> Run:
    """`codex exec` on `model` with Momor as its model provider and the org's key, in a home of
    its own, running the model's commands without asking; a key its config does not know
    fails the run (`--strict-config`)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    # Web search is a tool OpenAI hosts: a model served elsewhere is called without it.
    search = "" if model == ON_OPENAI else 'web_search = "disabled"'
    (codex_home / "config.toml").write_text(
        CONFIG.format(model=model, url=world.url, search=search)
    )
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "MOMOR_KEY": world.key}
    args = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--strict-config",
        "--dangerously-bypass-approvals-and-sandbox",
        task.prompt,
    ]
    return run("codex", args, env=env, cwd=task.work, fake=world.fake)


def events(done: Run) -> list[dict[str, Any]]:
    """The JSON lines `codex exec --json` printed."""
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def reasoning_back(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The reasoning an upstream call hands back to the model, with its seal: Responses'
    `reasoning` items (summary, encrypted content), Messages' `thinking` blocks (signature)."""
    if "input" in body:
        return [
            ("".join(part["text"] for part in item["summary"]), item.get("encrypted_content"))
            for item in body["input"]
            if item.get("type") == "reasoning"
        ]
    return [
        (block["thinking"], block["signature"])
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "thinking"
    ]


def completed(done: Run, kind: str) -> list[dict[str, Any]]:
    return [
        event["item"]
        for event in events(done)
        if event["type"] == "item.completed" and event["item"]["type"] == kind
    ]


@pytest.mark.parametrize(("model", "upstream", "provider"), SERVED)
def test_codex_runs_the_command_and_answers(
    world: World, tmp_path: Path, model: str, upstream: str, provider: str
) -> None:
    task = Task.make(tmp_path)
    cat = {"id": "call_cat", "name": "exec_command", "arguments": '{"cmd": "cat secret.txt"}'}
    world.fake.script(
        upstream, tool_round_trip=True, tool_calls=[cat], reasoning=THOUGHT, text=task.answer
    )

    done = codex(world, task, model, tmp_path / "home")

    assert done.status == 0, done.report
    commands = completed(done, "command_execution")
    ran = [(command["exit_code"], command["aggregated_output"]) for command in commands]
    assert ran == [(0, task.file.read_text())], done.report
    answers = [item["text"] for item in completed(done, "agent_message")]
    assert answers == [task.answer], done.report
    bodies = upstream_bodies(world.fake, upstream)
    answered = [body for body in bodies if tool_results(body)]
    assert len(answered) == 1, done.report
    results = tool_results(answered[0])
    assert list(results) == ["call_cat"], done.report
    assert f"The secret word is {task.word}." in results["call_cat"], done.report
    assert reasoning_back(answered[0]) == [(THOUGHT, SEALS[provider])], done.report

    records = billed_records(world)
    assert [(r.api, r.status, r.model, r.provider) for r in records] == [
        ("responses", "success", model, provider)
    ] * 2, done.report
    assert_priced(records, PRICES[model])
