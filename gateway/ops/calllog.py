"""One log line per call (with MOMOR_LOG_FORMAT=json): the request id, organization, model,
provider, status and latency, as fields of the line. Nothing the caller or a provider wrote
goes into it, and the handler's scrubbing filter applies as to every line."""

from __future__ import annotations

import logging

from billing.calls.observers import HandedOff

log = logging.getLogger("momor.calls")


def observe(handed: HandedOff) -> None:
    record = handed.record
    log.info(
        "call",
        extra={
            "request_id": record.request_id,
            "organization_id": record.organization_id,
            "model": record.model,
            "provider": record.provider,
            "status": record.status,
            "http_status": record.http_status,
            "latency_ms": record.latency_ms,
            "first_token_ms": record.first_token_ms,
            "attempts": len(record.attempts),
            "streamed": record.streamed,
            "trace_id": record.trace_id,
        },
    )
