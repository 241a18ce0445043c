"""Traces: a call's W3C `traceparent` is accepted and passed on to the providers it tries, and
its trace id is kept on the generation record. With OTEL_EXPORTER_OTLP_ENDPOINT set and the
`otel` extra installed, each call is also an OpenTelemetry span (kind server, a child of the
caller's span when it sent one), with a span for each attempt and one for the record hand-off,
exported over OTLP/HTTP; providers then see the call's span as their parent.

The attempt and hand-off spans are made from the call's record when it is handed off (the
attempts' start times follow from their durations, tried one after another), so tracing adds
no work to the attempts themselves."""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from billing.calls.observers import HandedOff
from billing.calls.records import CallRecord
from gateway.upstream.interface import TRACEPARENT

log = logging.getLogger(__name__)

# What goes upstream with each attempt of the call under way (gateway.upstream.pool reads it).
_HEADER = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
NO_TRACE, NO_SPAN = "0" * 32, "0" * 16


def parse(header: str) -> tuple[str, str, str] | None:
    """A version-00 traceparent's trace id, parent id and flags; None if it is not one (W3C:
    a header that does not parse is ignored, and so are all-zero ids)."""
    found = _HEADER.match(header.strip().lower())
    if found is None or found[1] == NO_TRACE or found[2] == NO_SPAN:
        return None
    return found[1], found[2], found[3]


class Tracer:
    """The OpenTelemetry side, set up only when an OTLP endpoint is configured."""

    def __init__(self) -> None:
        self.provider: Any = None
        self.tracer: Any = None
        self._open: dict[str, Any] = {}

    @property
    def enabled(self) -> bool:
        return self.tracer is not None

    def configure(self, endpoint: str | None) -> None:
        """Export to `endpoint` (an OTLP/HTTP base URL), or stop tracing when None."""
        if self.provider is not None:
            self.provider.shutdown()
        self.provider = self.tracer = None
        if not endpoint:
            return
        try:
            from gateway.ops.otel import tracer_provider
        except ImportError:
            log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed")
            return
        self.provider = tracer_provider(endpoint)
        self.tracer = self.provider.get_tracer("momor")

    def begin(self, record: CallRecord, header: str) -> None:
        """The call's trace: its span when tracing, the caller's trace otherwise."""
        parent = parse(header) if header else None
        if self.enabled:
            self._start_span(record, header if parent else "")
        elif parent is not None:
            record.trace_id = parent[0]
            TRACEPARENT.set(header.strip().lower())

    def _start_span(self, record: CallRecord, header: str) -> None:
        from gateway.ops.otel import start_call_span

        span, traceparent = start_call_span(self.tracer, record, header)
        self._open[record.request_id] = span
        record.trace_id = traceparent[3:35]
        TRACEPARENT.set(traceparent)

    def observe(self, handed: HandedOff) -> None:
        span = self._open.pop(handed.record.request_id, None)
        if span is not None:
            from gateway.ops.otel import end_call_span

            end_call_span(self.tracer, span, handed)


TRACER = Tracer()


def configure_from_environment() -> None:
    TRACER.configure(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
