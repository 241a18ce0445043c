"""A call's record filled in as its tries go, from plain data the gateway passes (billing never
imports the gateway): each try's row as it is made, fails or serves, and the call's outcome
once an answer is served or a stream ends."""

from __future__ import annotations

from dataclasses import dataclass, replace

from billing.calls.cost import byok_fee
from billing.calls.records import AttemptRecord, CallRecord, TokenCounts

ERROR_CHARS = 2000
INTERRUPTED = "Momor stopped mid-answer (its process ended); billed for what was delivered."
STREAM_STATUSES = {"success": "success", "broken": "failed", "cancelled": "cancelled"}


@dataclass(frozen=True, slots=True)
class Offer:
    """The offering and key a try is made on, as its row records them."""

    model: str
    provider: str
    region: str
    upstream_id: str
    key_source: str
    prices: dict[str, str]
    offering_id: int


@dataclass(frozen=True, slots=True)
class Served:
    """What answered the call, and how the answer ended."""

    model: str
    provider: str
    finish_reason: str
    native_finish_reason: str
    tokens: TokenCounts | None
    latency_ms: int


def new_attempt(record: CallRecord, offer: Offer) -> AttemptRecord:
    row = AttemptRecord(
        position=len(record.attempts),
        model=offer.model,
        provider=offer.provider,
        region=offer.region,
        upstream_id=offer.upstream_id,
        key_source=offer.key_source,
        prices=offer.prices,
        offering_id=offer.offering_id,
        fee=str(byok_fee()) if offer.key_source == "own" else "",
    )
    record.attempts.append(row)
    return row


def attempt_failed(
    row: AttemptRecord,
    status: int | None,
    error: str,
    latency_ms: int,
    tokens: TokenCounts | None = None,
) -> None:
    """A failed try; `tokens` those the provider generated for an answer Momor rejected (they
    are billed as the try's cost)."""
    row.http_status = status
    row.error = error[:ERROR_CHARS]
    row.latency_ms = latency_ms
    row.tokens = tokens or row.tokens


def attempt_served(
    row: AttemptRecord, status: int, tokens: TokenCounts | None, latency_ms: int
) -> None:
    row.http_status = status
    row.latency_ms = latency_ms
    row.tokens = tokens


def call_served(record: CallRecord, served: Served) -> None:
    record.status = "success"
    record.http_status = 200
    record.model = served.model
    record.provider = served.provider
    record.finish_reason = served.finish_reason
    record.native_finish_reason = served.native_finish_reason
    record.tokens = served.tokens or TokenCounts()
    record.latency_ms = served.latency_ms


def stream_ended(
    record: CallRecord, row: AttemptRecord, outcome: str, served: Served, attempt_ms: int
) -> None:
    """A stream's end: `success`, `broken` (it failed after it had shown something) or
    `cancelled` (the client went away). Its tokens are the provider's usage or an estimate."""
    row.latency_ms = attempt_ms
    row.tokens = served.tokens
    if outcome == "success":
        row.http_status = 200
    call_served(record, served)
    record.status = STREAM_STATUSES[outcome]
    if outcome != "success":
        record.finish_reason = "error" if outcome == "broken" else record.finish_reason
        record.error = row.error or "The client went away mid-answer."


def stream_interrupted(
    record: CallRecord, row: AttemptRecord, served: Served, attempt_ms: int
) -> CallRecord:
    """The record a stream's call would have if its process stopped now
    (billing.recording.progress): a copy of the call's and its serving try's, which go on
    unchanged."""
    intent_row = replace(row, error=INTERRUPTED)
    attempts = [intent_row if one is row else one for one in record.attempts]
    intent = replace(record, attempts=attempts)
    stream_ended(intent, intent_row, "broken", served, attempt_ms)
    return intent


def estimated_tokens(body_size: int, delivered_chars: int) -> TokenCounts:
    """No usage from the provider: about four characters a token, of the prompt's JSON and of
    what was delivered."""
    return TokenCounts(
        prompt=max(body_size // 4, 1), completion=(delivered_chars + 3) // 4, estimated=True
    )
