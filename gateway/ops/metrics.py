"""Per-call Prometheus metrics, derived from each call's record when billing hands it off, and
added to the metrics in bulk (`gateway.ops.tally`: once a second, and before each scrape).

Every process counts its own calls. With `PROMETHEUS_MULTIPROC_DIR` set (prometheus-client's
multiprocess mode), the processes write their values to files in that directory and any of
them answers a scrape with the sum (see docs/operations.md, "Metrics")."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from prometheus_client import Counter, Gauge, Histogram

from billing.calls.cost import NANO
from billing.calls.observers import HandedOff
from billing.calls.records import APIS, AttemptRecord, CallRecord
from gateway.ops.tally import TALLY

# Seconds: a plain call's answer is usually under a second, a long completion minutes.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
OTHER = "other"

CALLS = Counter(
    "momor_calls",
    "Calls, by the API called (chat, messages, responses, embeddings), the model and provider "
    "that served them (empty when none did), the key used (own: the organization's saved key; "
    "momor: Momor's), how the call ended and its HTTP status.",
    ["api", "model", "provider", "key_source", "status", "code"],
)
LATENCY = Histogram(
    "momor_call_duration_seconds",
    "From the request's arrival to the call's end (the last chunk of a stream).",
    ["api", "model", "provider"],
    buckets=LATENCY_BUCKETS,
)
FIRST_CHUNK = Histogram(
    "momor_call_first_chunk_seconds",
    "Streamed calls: from the request's arrival to the first chunk with something to show.",
    ["api", "model", "provider"],
    buckets=LATENCY_BUCKETS,
)
UPSTREAM = Histogram(
    "momor_upstream_duration_seconds",
    "Each attempt at a provider, from the request sent to its answer's end or failure.",
    ["provider", "outcome"],
    buckets=LATENCY_BUCKETS,
)
FAILOVERS = Counter(
    "momor_failovers",
    "Attempts that failed and moved the call to its next candidate, by provider and cause "
    "(the provider's HTTP status, `timeout`, `connect` or `other`).",
    ["provider", "cause"],
)
TOKENS = Counter(
    "momor_tokens",
    "Tokens of served calls, by kind (prompt, completion, cached, reasoning).",
    ["api", "model", "provider", "kind"],
)
COST = Counter(
    "momor_cost_usd",
    "What calls cost their organizations, in USD.",
    ["api", "model", "provider"],
)
ADMISSIONS = Counter(
    "momor_admissions",
    "Admission decisions (admitted, 402, 429) by organization id; organizations past "
    "MOMOR_METRICS_ORGANIZATIONS distinct ones are counted as `other`.",
    ["organization", "decision"],
)
RESERVATIONS = Gauge(
    "momor_reservations_open",
    "Calls of this process holding a credit reservation not yet settled or released.",
    multiprocess_mode="livesum",
)
HANDOFF = Histogram(
    "momor_handoff_duration_seconds",
    "How long a call's record took to become durable (Redis stream or journal).",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)

PER_CALL = (
    CALLS,
    LATENCY,
    FIRST_CHUNK,
    UPSTREAM,
    FAILOVERS,
    TOKENS,
    COST,
    ADMISSIONS,
    RESERVATIONS,
    HANDOFF,
)
_TOKEN_KINDS = ("prompt", "completion", "cached", "reasoning")
# Each labelled child once looked up (prometheus-client's `labels` checks and copies its
# arguments on every call): the per-call cost is then a dict lookup and the child's update.
_children: dict[tuple[object, tuple[str, ...]], Any] = {}


def child(metric: Any, *labels: str) -> Any:
    key = (metric, labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*labels)
    return found


class OrganizationLabels:
    """Bounded cardinality: the first `limit` organizations a process sees get a label of
    their own (their id), the listed ones always do, every other one is `other`."""

    def __init__(self, limit: int, always: frozenset[str]) -> None:
        self.limit, self.always = limit, always
        self.seen: set[str] = set()

    def label(self, organization_id: int) -> str:
        name = str(organization_id)
        if name in self.seen or name in self.always:
            return name
        if len(self.seen) < self.limit:
            self.seen.add(name)
            return name
        return OTHER


_organizations = OrganizationLabels(0, frozenset())
_enabled = False


def configure() -> None:
    global _organizations, _enabled
    _enabled = True
    TALLY.immediate = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
    _organizations = OrganizationLabels(
        settings.MOMOR_METRICS_ORGANIZATIONS, frozenset(settings.MOMOR_METRICS_ORGANIZATION_IDS)
    )


def reserved() -> None:
    """A call of this process was admitted with a reservation."""
    if _enabled:
        TALLY.add([(RESERVATIONS, 1)], [])


def api_label(record: CallRecord) -> str:
    """The API called, one of the four (`other` for anything else: the label stays bounded)."""
    return record.api if record.api in APIS else OTHER


def observe(handed: HandedOff) -> None:
    counts: list[tuple[Any, float]] = []
    observed: list[tuple[Any, float]] = []
    record = handed.record
    served = _served(record)
    api, model, provider = api_label(record), record.model, record.provider
    key_source = served.key_source if served else ""
    counts.append((child(CALLS, api, model, provider, key_source, record.status,
                         str(record.http_status)), 1))  # fmt: skip
    if record.attempts:  # a call refused before routing has no duration of its own
        observed.append((child(LATENCY, api, model, provider), record.latency_ms / 1000))
        _attempts(record, counts, observed)
    if record.streamed and record.first_token_ms is not None:
        observed.append((child(FIRST_CHUNK, api, model, provider), record.first_token_ms / 1000))
    if served is not None:
        _usage(record, handed.cost_units, counts)
    _admission(record, counts)
    observed.append((HANDOFF, max(handed.ended - handed.began, 0.0)))
    TALLY.add(counts, observed)


def _served(record: CallRecord) -> AttemptRecord | None:
    if record.status != "success" and not record.tokens.completion:
        return None
    return record.attempts[-1] if record.attempts else None


def _attempts(
    record: CallRecord, counts: list[tuple[Any, float]], observed: list[tuple[Any, float]]
) -> None:
    last = len(record.attempts) - 1
    for index, attempt in enumerate(record.attempts):
        ok = attempt.http_status is not None and attempt.http_status < 400 and not attempt.error
        place = place_of(attempt)
        observed.append(
            (child(UPSTREAM, place, "ok" if ok else "failed"), attempt.latency_ms / 1000)
        )
        if not ok and index < last:
            counts.append((child(FAILOVERS, place, failure_cause(attempt)), 1))


def place_of(attempt: AttemptRecord) -> str:
    """The provider as the record names the one that served (`azure@eu`)."""
    return f"{attempt.provider}@{attempt.region}" if attempt.region else attempt.provider


def failure_cause(attempt: AttemptRecord) -> str:
    if attempt.http_status:
        return str(attempt.http_status)
    error = attempt.error.lower()
    if "timed out" in error or "time-out" in error or "timeout" in error:
        return "timeout"
    if "connect" in error or "reach" in error:
        return "connect"
    return "other"


def _usage(record: CallRecord, cost_units: int, counts: list[tuple[Any, float]]) -> None:
    api, model, provider, tokens = api_label(record), record.model, record.provider, record.tokens
    for kind in _TOKEN_KINDS:
        count = getattr(tokens, kind)
        if count:
            counts.append((child(TOKENS, api, model, provider, kind), count))
    if cost_units:
        counts.append((child(COST, api, model, provider), float(cost_units * NANO)))


def _admission(record: CallRecord, counts: list[tuple[Any, float]]) -> None:
    if record.ticket is not None:
        counts.append((RESERVATIONS, -1))
        decision = "admitted"
    elif record.http_status in (402, 429) and not record.attempts:
        decision = str(record.http_status)
    else:
        return
    counts.append((child(ADMISSIONS, _organizations.label(record.organization_id), decision), 1))
