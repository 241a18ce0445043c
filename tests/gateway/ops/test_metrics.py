"""/metrics after real calls: the exact change of each counter and histogram a plain call, a
streamed call, a failed-over call and a refused call make."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import httpx
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain, record_call
from gateway.ops import metrics
from gateway.ops.metrics import LATENCY_BUCKETS
from tests.billing.records import a_record, an_embeddings_record
from tests.conftest import make_key, make_org
from tests.gateway.calls import (
    ask,
    settle,
    settled_world,  # noqa: F401 - autouse
    wait_recorded,
)
from tests.gateway.conftest import World
from tests.gateway.ops.scrape import changes, sample, scrape
from tests.gateway.relay.test_failover import unreachable
from tests.rate_window import fresh_rate_window


@pytest.fixture(autouse=True)
def fresh_organization_labels() -> None:
    """Each test's organizations among the first the process labels (earlier tests in the
    same process have seen others)."""
    metrics.configure()


PER_CALL = (
    "momor_calls_total",
    "momor_call_duration_seconds_count",
    "momor_call_duration_seconds_sum",
    "momor_call_first_chunk_seconds_count",
    "momor_call_first_chunk_seconds_sum",
    "momor_upstream_duration_seconds_count",
    "momor_upstream_duration_seconds_sum",
    "momor_failovers_total",
    "momor_tokens_total",
    "momor_cost_usd_total",
    "momor_admissions_total",
)


def record_of(response: httpx.Response) -> Generation:
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    return Generation.objects.prefetch_related("attempts").get(request_id=request_id)


def seconds(ms: int | None) -> float:
    assert ms is not None
    return ms / 1000


def served_changes(world: World, generation: Generation, *, streamed: bool) -> dict[Any, float]:
    model, provider = generation.model, generation.provider
    org = str(world.org.id)
    call = {"api": "chat", "model": model, "provider": provider}
    expected = {
        sample("momor_calls_total", **call, key_source="momor", status="success", code="200"):
            1.0,
        sample("momor_call_duration_seconds_count", **call): 1.0,
        sample("momor_call_duration_seconds_sum", **call): seconds(generation.latency_ms),
        sample("momor_tokens_total", **call, kind="prompt"): float(generation.prompt_tokens),
        sample("momor_tokens_total", **call, kind="completion"):
            float(generation.completion_tokens),
        sample("momor_cost_usd_total", **call): float(generation.cost),
        sample("momor_admissions_total", organization=org, decision="admitted"): 1.0,
    }  # fmt: skip
    if streamed:
        expected[sample("momor_call_first_chunk_seconds_count", **call)] = 1.0
        expected[sample("momor_call_first_chunk_seconds_sum", **call)] = seconds(
            generation.first_token_ms
        )
    return expected


def with_attempts(expected: dict[Any, float], generation: Generation) -> dict[Any, float]:
    for attempt in generation.attempts.all():
        outcome = "failed" if attempt.error else "ok"
        place = f"{attempt.provider}@{attempt.region}" if attempt.region else attempt.provider
        labels = {"provider": place, "outcome": outcome}
        count = sample("momor_upstream_duration_seconds_count", **labels)
        total = sample("momor_upstream_duration_seconds_sum", **labels)
        expected[count] = expected.get(count, 0.0) + 1
        expected[total] = expected.get(total, 0.0) + attempt.latency_ms / 1000
    return expected


def assert_changes(actual: dict[Any, float], expected: dict[Any, float]) -> None:
    expected = {name: value for name, value in expected.items() if value}  # 0 ms moves nothing
    assert set(actual) == set(expected)
    for name, value in expected.items():
        assert actual[name] == pytest.approx(value, abs=1e-9), name


def test_a_plain_call_moves_each_counter_and_histogram_by_exactly_its_own(world: World) -> None:
    before = scrape(world.url)
    response = world.post(ask("openai/gpt-5"))
    assert response.status_code == 200, response.text
    generation = record_of(response)
    after = scrape(world.url)

    expected = with_attempts(served_changes(world, generation, streamed=False), generation)
    assert generation.prompt_tokens > 0 and generation.cost > 0
    assert_changes(changes(before, after, *PER_CALL), expected)


def test_the_call_lands_in_its_own_latency_bucket(world: World) -> None:
    before = scrape(world.url)
    response = world.post(ask("openai/gpt-5"))
    generation = record_of(response)
    after = scrape(world.url)

    labels = {"api": "chat", "model": "openai/gpt-5", "provider": "openai"}
    moved = changes(before, after, "momor_call_duration_seconds_bucket")
    latency = generation.latency_ms / 1000
    expected = {
        sample("momor_call_duration_seconds_bucket", **labels, le=_le(bound)): 1.0
        for bound in (*LATENCY_BUCKETS, float("inf"))
        if latency <= bound
    }
    assert moved == expected


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else str(float(bound))


def test_a_streamed_call_adds_its_time_to_first_chunk(world: World) -> None:
    before = scrape(world.url)
    response = world.stream(ask("openai/gpt-5"))
    assert response.status_code == 200 and response.text.endswith("data: [DONE]\n\n")
    generation = record_of(response)
    after = scrape(world.url)

    assert generation.first_token_ms is not None
    expected = with_attempts(served_changes(world, generation, streamed=True), generation)
    assert_changes(changes(before, after, *PER_CALL), expected)


def test_a_failed_over_call_counts_the_failover_and_its_cause(world: World) -> None:
    unreachable("openai")
    before = scrape(world.url)
    response = world.post(ask("openai/gpt-5"))
    assert response.status_code == 200, response.text
    generation = record_of(response)
    after = scrape(world.url)

    assert generation.provider == "azure@eu"
    expected = with_attempts(served_changes(world, generation, streamed=False), generation)
    expected[sample("momor_failovers_total", provider="openai", cause="connect")] = 1.0
    assert_changes(changes(before, after, *PER_CALL), expected)


def test_a_call_refused_for_credit_counts_a_402_for_its_organization(world: World) -> None:
    broke = make_org("broke", credits=Decimal(0))
    key, _ = make_key(broke, name="broke")
    settle()
    before = scrape(world.url)
    response = world.post(ask("openai/gpt-5"), key=key)
    assert response.status_code == 402, response.text
    record_of(response)
    after = scrape(world.url)

    expected = {
        sample("momor_calls_total", api="chat", model="", provider="", key_source="",
               status="refused", code="402"): 1.0,
        sample("momor_admissions_total", organization=str(broke.id), decision="402"): 1.0,
    }  # fmt: skip
    assert_changes(changes(before, after, *PER_CALL), expected)


def test_a_call_past_its_rate_limit_counts_a_429(world: World) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="slow", rate_limit=1)
    settle()
    assert world.post(ask("openai/gpt-5"), key=key).status_code == 200
    before = scrape(world.url)
    response = world.post(ask("openai/gpt-5"), key=key)
    assert response.status_code == 429, response.text
    record_of(response)
    after = scrape(world.url)

    decision = sample("momor_admissions_total", organization=str(world.org.id), decision="429")
    assert changes(before, after, "momor_admissions_total") == {decision: 1.0}


def test_open_reservations_return_to_where_they_were(world: World) -> None:
    before = scrape(world.url)
    world.post(ask("openai/gpt-5"))
    world.stream(ask("openai/gpt-5"))
    after = scrape(world.url)
    name = sample("momor_reservations_open")
    assert after[name] == before[name]


def test_a_call_of_another_api_is_counted_under_its_own_api_label(world: World) -> None:
    """A record handed off through the real record path, as the embeddings route hands its
    calls off: every per-call metric names the API, chat calls' figures untouched."""
    record = an_embeddings_record(world.org.pk)
    before = scrape(world.url)
    asyncio.run(record_call(record))
    assert drain()
    after = scrape(world.url)

    call = {"api": "embeddings", "model": "openai/text-embedding-3-small", "provider": "openai"}
    expected = {
        sample("momor_calls_total", **call, key_source="momor", status="success", code="200"):
            1.0,
        sample("momor_call_duration_seconds_count", **call): 1.0,
        sample("momor_call_duration_seconds_sum", **call): 0.045,
        sample("momor_tokens_total", **call, kind="prompt"): 1000.0,
        sample("momor_cost_usd_total", **call): 0.00125,
        sample("momor_upstream_duration_seconds_count", provider="openai", outcome="ok"): 1.0,
        sample("momor_upstream_duration_seconds_sum", provider="openai", outcome="ok"): 0.04,
    }  # fmt: skip
    assert_changes(changes(before, after, *PER_CALL), expected)


def test_an_api_label_is_one_of_the_four_or_other() -> None:
    """The label's values stay bounded, whatever a record says."""
    assert [
        metrics.api_label(a_record(1, api=api))
        for api in ("chat", "messages", "responses", "embeddings", "images", "x" * 500)
    ] == ["chat", "messages", "responses", "embeddings", "other", "other"]
