"""A quick run's section of governed Momor, measured on the test gateway and the fake upstream
with the benchmark's own catalog: beside the Chat Completions call, an embeddings call, a
Messages call to the model an Anthropic offering serves and a Responses call to the model an
OpenAI offering serves, the latter two plain and streamed, each beside its direct call; and the
JSON the run saves with their added latency, their ratios to chat's and the targets on them.
The counts are cut down: the test reads the run's shape, not its times."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from bench import deploy, measure
from bench.report import save
from bench.run import Bench, Gateway, build_report, parse
from gateway.catalog.state import STATE
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream

pytestmark = pytest.mark.django_db(transaction=True)

GATEWAY = Gateway("momor-uvicorn", "momor", server="uvicorn")
CALLS, STREAMS = 20, 10


async def at_once(*args: Any, **kwargs: Any) -> float:
    """The machine taken as quiet without waiting for it."""
    return 0.0


def deployed(key: str, fake_url: str, logs: Path) -> deploy.Deployment:
    """The governed deployment as `Deployment.setup` leaves it, its stores the test's own."""
    deployment = deploy.Deployment(deploy.Settings(), fake_url, logs)
    deployment.key, deployment.embeddings = key, True
    deployment.messages = deployment.responses = True
    return deployment


@pytest.fixture
def bench(
    gateway: str, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Bench:
    """A quick run whose Momor is the test gateway, serving the benchmark's catalog."""
    monkeypatch.setenv(deploy.FAKE_KEY_ENV, "sk-bench-fake")
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(deploy.catalog_text(fake.url))
    call_command("load_catalog", str(catalog))
    STATE.rebuild_catalog()
    deploy.script_fake(fake.url)
    org = make_org("bench", credits=Decimal(1000))
    key, _ = make_key(org, name="bench", rate_limit=10_000_000)
    monkeypatch.setattr(measure, "settle", at_once)
    run = Bench(parse(["--quick", "--server", "uvicorn", "--soak", "0"]), "test")
    run.plan = replace(
        run.plan, latency_concurrency=(1,), latency_count=CALLS, latency_seconds=30.0,
        throughput_concurrency=(2,), throughput_seconds=0.3, stream_concurrency=(1,),
        stream_count=STREAMS, stream_seconds=30.0, warmup=10, others_warmup=5,
    )  # fmt: skip
    run.fake_url, run.deployment = fake.url, deployed(key, fake.url, tmp_path)
    base = f"{gateway}/v1"
    monkeypatch.setattr(run, "launch", lambda g, count: ([], run.momor_target(g, base)))
    return run


def test_a_quick_runs_json_holds_the_other_apis_calls_beside_chat(
    bench: Bench, tmp_path: Path
) -> None:
    section = asyncio.run(bench.section(GATEWAY, 1))
    saved = json.loads(save(build_report(bench, [GATEWAY], [[section]], []), tmp_path).read_text())

    (momor,) = saved["sections"]
    for side in ("direct", "target"):
        assert momor[side]["errors"] == {}
        for phase in ("latency_c1", "embeddings_c1", "messages_c1", "responses_c1"):
            assert momor[side][phase]["calls"] == CALLS
        for phase in ("stream_c1", "messages_stream_c1", "responses_stream_c1"):
            assert momor[side][phase]["chunks_seen"] == {str(deploy.CHUNKS): STREAMS}
    for key in (
        "embeddings_c1_p50", "embeddings_c1_p99", "messages_c1_p50", "messages_c1_p99",
        "messages_stream_c1_first_p50", "messages_stream_c1_first_p99",
        "messages_stream_c1_last_p50", "messages_stream_c1_last_p99",
        "responses_c1_p50", "responses_c1_p99",
        "responses_stream_c1_first_p50", "responses_stream_c1_first_p99",
        "responses_stream_c1_last_p50", "responses_stream_c1_last_p99",
    ):  # fmt: skip
        assert momor["added"][key] is not None, key
    rows = momor["versus_chat"]
    assert [(r["api"], r["call"], r["quantile"]) for r in rows if r["added_ms"] is not None] == [
        ("embeddings", "at c1", "p50"), ("embeddings", "at c1", "p99"),
        ("messages", "at c1", "p50"), ("messages", "at c1", "p99"),
        ("messages", "to the first chunk, stream c1", "p50"),
        ("messages", "to the first chunk, stream c1", "p99"),
        ("messages", "to the last chunk, stream c1", "p50"),
        ("messages", "to the last chunk, stream c1", "p99"),
        ("responses", "at c1", "p50"), ("responses", "at c1", "p99"),
        ("responses", "to the first chunk, stream c1", "p50"),
        ("responses", "to the first chunk, stream c1", "p99"),
        ("responses", "to the last chunk, stream c1", "p50"),
        ("responses", "to the last chunk, stream c1", "p99"),
    ]  # fmt: skip
    assert saved["versus_chat_over"] == [
        {"gateway": "momor-uvicorn", **r} for r in rows if r["over"]
    ]
    versus_chat = [g for g in saved["targets"] if "vs Chat Completions'" in g["target"]]
    assert [g["value"] for g in versus_chat] == [r["ratio"] for r in rows]
