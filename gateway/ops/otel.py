"""The OpenTelemetry SDK's part of tracing (the `otel` extra): imported only when an OTLP
endpoint is configured."""

from __future__ import annotations

import os
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from billing.calls.observers import HandedOff
from billing.calls.records import AttemptRecord, CallRecord
from gateway.ops.metrics import place_of

_PROPAGATOR = TraceContextTextMapPropagator()


def tracer_provider(endpoint: str) -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "momor")})
    )
    exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def start_call_span(tracer: Any, record: CallRecord, header: str) -> tuple[Any, str]:
    """The call's span, started now, and the traceparent that names it to providers."""
    parent = _PROPAGATOR.extract({"traceparent": header}) if header else None
    span = tracer.start_span("chat.completions", context=parent, kind=SpanKind.SERVER)
    span.set_attribute("momor.request_id", record.request_id)
    span.set_attribute("momor.organization_id", record.organization_id)
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=set_span_in_context(span))
    return span, carrier["traceparent"]


def end_call_span(tracer: Any, span: Any, handed: HandedOff) -> None:
    record = handed.record
    context = set_span_in_context(span)
    for attempt, start, end in _timeline(record, span.start_time, _ns(handed.began)):
        child = tracer.start_span(
            "attempt", context=context, kind=SpanKind.CLIENT, start_time=start,
            attributes={
                "momor.provider": place_of(attempt), "momor.model": attempt.model,
                "momor.key_source": attempt.key_source, "momor.position": attempt.position,
                "http.response.status_code": attempt.http_status or 0,
            },
        )  # fmt: skip
        if attempt.error:
            child.set_status(Status(StatusCode.ERROR, attempt.error[:200]))
        child.end(end_time=end)
    handoff = tracer.start_span("record.hand_off", context=context, start_time=_ns(handed.began))
    handoff.end(end_time=_ns(handed.ended))
    span.set_attribute("momor.model", record.model)
    span.set_attribute("momor.provider", record.provider)
    span.set_attribute("momor.status", record.status)
    span.set_attribute("http.response.status_code", record.http_status)
    if record.http_status >= 500:
        span.set_status(Status(StatusCode.ERROR, record.error[:200]))
    span.end(end_time=_ns(handed.ended))


def _timeline(
    record: CallRecord, call_start: int, answered: int
) -> list[tuple[AttemptRecord, int, int]]:
    """Each attempt with its start and end: tried one after another, the last ending when the
    answer did, none starting before the call."""
    placed, end = [], answered
    for attempt in reversed(record.attempts):
        start = max(end - attempt.latency_ms * 1_000_000, call_start)
        placed.append((attempt, start, max(end, start)))
        end = start
    return placed[::-1]


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)
