"""Traces: the caller's traceparent reaches the providers and the record; with an OTLP endpoint,
the call, each attempt and the record hand-off are spans exported to a real OTLP/HTTP collector
on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from billing.models import Generation
from gateway.ops.tracing import TRACER
from tests.gateway.calls import (
    ask,
    settled_world,  # noqa: F401 - autouse
    wait_recorded,
)
from tests.gateway.conftest import World
from tests.gateway.ops.collector import Collector
from tests.gateway.relay.test_failover import unreachable

TRACE, PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    TRACER.configure(found.url)
    yield found
    TRACER.configure(None)
    found.close()


def sent_upstream(world: World) -> list[str]:
    return [r["headers"].get("traceparent", "") for r in world.fake.requests()]


def trace_of(world: World, request_id: str) -> str:
    wait_recorded(request_id)
    return Generation.objects.get(request_id=request_id).trace_id


def test_the_callers_traceparent_goes_to_the_provider_and_onto_the_record(world: World) -> None:
    response = world.post(ask("openai/gpt-5"), headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200, response.text
    assert sent_upstream(world) == [TRACEPARENT]
    assert trace_of(world, response.headers["x-momor-request-id"]) == TRACE


@pytest.mark.parametrize(
    "header",
    ["garbage", f"00-{'0' * 32}-{PARENT}-01", f"00-{TRACE}-{'0' * 16}-01", f"01-{TRACE}"],
)
def test_a_traceparent_that_is_not_one_is_ignored(world: World, header: str) -> None:
    response = world.post(ask("openai/gpt-5"), headers={"traceparent": header})
    assert response.status_code == 200, response.text
    assert sent_upstream(world) == [""]
    assert trace_of(world, response.headers["x-momor-request-id"]) == ""


def test_without_a_traceparent_nothing_is_sent_or_recorded(world: World) -> None:
    response = world.post(ask("openai/gpt-5"))
    assert sent_upstream(world) == [""]
    assert trace_of(world, response.headers["x-momor-request-id"]) == ""


def test_a_traced_call_exports_its_span_its_attempts_and_its_hand_off(
    world: World, collector: Collector
) -> None:
    unreachable("openai")
    response = world.post(ask("openai/gpt-5"), headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200, response.text
    request_id = response.headers["x-momor-request-id"]
    assert trace_of(world, request_id) == TRACE
    TRACER.provider.force_flush()

    spans = {span.name: span for span in collector.spans if span.trace_id.hex() == TRACE}
    attempts = [s for s in collector.spans if s.name == "attempt" and s.trace_id.hex() == TRACE]
    call = spans["chat.completions"]
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    assert call.parent_span_id.hex() == PARENT
    assert [s.parent_span_id for s in attempts] == [call.span_id, call.span_id]
    assert spans["record.hand_off"].parent_span_id == call.span_id
    providers = [
        next(a.value.string_value for a in s.attributes if a.key == "momor.provider")
        for s in attempts
    ]
    assert providers == ["openai", "azure@eu"]
    # the provider that answered saw the call's span as its parent
    assert [header[:52] for header in sent_upstream(world)] == [f"00-{TRACE}-{call.span_id.hex()}"]
    assert call.start_time_unix_nano <= attempts[0].start_time_unix_nano
    assert attempts[0].end_time_unix_nano <= attempts[1].start_time_unix_nano
    assert attempts[1].end_time_unix_nano <= spans["record.hand_off"].start_time_unix_nano
    assert spans["record.hand_off"].end_time_unix_nano <= call.end_time_unix_nano


def test_a_traced_call_without_a_traceparent_starts_a_trace_of_its_own(
    world: World, collector: Collector
) -> None:
    response = world.post(ask("openai/gpt-5"))
    trace = trace_of(world, response.headers["x-momor-request-id"])
    TRACER.provider.force_flush()

    assert len(trace) == 32 and trace != "0" * 32
    call = next(s for s in collector.spans if s.name == "chat.completions")
    assert call.trace_id.hex() == trace and call.parent_span_id == b""
    assert [header[:52] for header in sent_upstream(world)] == [f"00-{trace}-{call.span_id.hex()}"]
