"""Real agents from the npm registry (`tests/clients`), run headless against the gateway: a task
whose answer is in a file the agent must read with one of its tools, a bounded run in a home
of its own, and what Momor recorded and billed for the calls it made."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from billing.ledger.posting import ledger_sum
from billing.models import EntryKind, Generation, LedgerEntry
from billing.recording.hand_off import drain
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import World

BIN = Path(__file__).resolve().parents[1] / "clients" / "node_modules" / ".bin"
SECONDS = 120
TEST_SECONDS = 240
"""A test around a run: the run's bound, the gateway's setup and the records' storing (the
suite's timeout, 120 s in pyproject.toml, would end it before the run's bound could say why)."""
CREDITS = Decimal(100)


@dataclass(frozen=True)
class Task:
    """A work directory whose `secret.txt` holds a word no model could guess, and the answer
    the scripted model gives once the agent has read it."""

    work: Path
    word: str

    @classmethod
    def make(cls, root: Path) -> Task:
        work = root / "work"
        work.mkdir()
        task = cls(work, f"PERIWINKLE-{secrets.token_hex(4)}")
        task.file.write_text(f"The secret word is {task.word}.\n")
        return task

    @property
    def file(self) -> Path:
        return self.work / "secret.txt"

    @property
    def prompt(self) -> str:
        return "What is the secret word in secret.txt? Read the file to find out."

    @property
    def answer(self) -> str:
        return f"The word is {self.word}."


@dataclass(frozen=True)
class Run:
    """An agent's finished run, shown whole when an assertion about it fails."""

    argv: list[str]
    status: int | None
    stdout: str
    stderr: str
    upstream: list[str]
    """The path and model of every call the fake upstream received."""

    @property
    def report(self) -> str:
        return (
            f"\n$ {' '.join(self.argv)}\nexit status: {self.status}\n"
            f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr[-8000:]}\n"
            f"--- the fake upstream received\n" + "\n".join(self.upstream)
        )


def run(agent: str, args: list[str], *, env: dict[str, str], cwd: Path, fake: FakeUpstream) -> Run:
    """Run `agent` (a binary of `tests/clients`) to its end, at most SECONDS; its environment
    is `env` alone but for PATH, on which the clients' Node.js 22 comes first."""
    assert (BIN / agent).exists(), "the test clients are not installed: run scripts/test.sh once"
    argv = [str(BIN / agent), *args]
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    process = subprocess.Popen(  # noqa: S603 - the pinned clients, argv written by the tests
        argv,
        env={**env, "PATH": path},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n(killed after {SECONDS} s)"
    seen = [f"{call['path']} {call.get('model')}" for call in fake.requests()]
    return Run([agent, *args], process.returncode, stdout, stderr, seen)


def upstream_bodies(fake: FakeUpstream, model: str) -> list[dict[str, Any]]:
    return [call["body"] for call in fake.requests(model)]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """The tools' results an upstream call carries, by call id, in its API's shape: Chat
    Completions' `tool` messages, Messages' `tool_result` blocks (text, or text blocks),
    Responses' `function_call_output` items."""
    if "input" in body:
        items = body["input"] if isinstance(body["input"], list) else ()
        return {
            item["call_id"]: item["output"]
            for item in items
            if item.get("type") == "function_call_output"
        }
    found: dict[str, str] = {}
    for message in body["messages"]:
        if message["role"] == "tool":
            found[message["tool_call_id"]] = message["content"]
        content = message["content"] if isinstance(message["content"], list) else ()
        for block in content:
            if block["type"] == "tool_result":
                inner = block["content"]
                text = inner if isinstance(inner, str) else "".join(b["text"] for b in inner)
                found[block["tool_use_id"]] = text
    return found


def billed_records(world: World) -> list[Generation]:
    """The organization's records, oldest first, once stored and charged: each charge in the
    ledger is its record's cost, and the balance is the credits less them all."""
    assert drain(timeout=30), "the records were not stored in time"
    records = list(Generation.objects.filter(organization=world.org).order_by("created_at"))
    charges = LedgerEntry.objects.filter(organization=world.org, kind=EntryKind.CHARGE)
    charged = {charge.generation_id: -charge.amount for charge in charges}
    assert charged == {r.pk: r.cost for r in records if r.cost}, (charged, records)
    world.org.refresh_from_db()
    assert world.org.balance == CREDITS - sum(charged.values()) == ledger_sum(world.org.pk)
    return records


def assert_priced(records: list[Generation], prices: tuple[Decimal, Decimal]) -> None:
    """Each record costs its tokens at its offering's prices (dollars per million prompt and
    completion tokens), and something."""
    prompt, completion = prices
    for record in records:
        expected = (record.prompt_tokens * prompt + record.completion_tokens * completion) / 10**6
        assert record.cost == expected > 0, record
