"""One call on its way through its candidates (`Call`), each try of one (`Attempt`) with its row
of the call's record, and the answer the endpoint sends (`Answer`)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from billing.calls.building import Offer, Served, attempt_failed, attempt_served, new_attempt
from billing.calls.records import CallRecord, TokenCounts
from core.redaction import scrub
from gateway.providers.contract import CompletionUsage, Failure, Target, Usage
from gateway.relay.admit import Renewal
from gateway.relay.answer_usage import priced, token_counts
from gateway.request.call import AskedCall
from gateway.routing.candidates import Candidate, target_of
from gateway.upstream.interface import UpstreamError

if TYPE_CHECKING:
    from gateway.routing.trace import RoutingTrace


@dataclass(slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes | AsyncIterator[bytes]
    native: bool = False
    """Written in the API the call came by, as its provider wrote it (a Messages call served by
    Anthropic): the entry sends it as it is, not from Chat Completions' shape."""


@dataclass(slots=True)
class Call:
    request_id: str
    asked: AskedCall
    candidates: list[Candidate]
    record: CallRecord
    started: float = field(default_factory=time.monotonic)
    created: int = field(default_factory=lambda: int(time.time()))
    last: tuple[Candidate, Failure] | None = None
    uncarried: str = ""
    renewal: Renewal | None = None
    tries: list[Attempt] = field(default_factory=list)
    """Each try made, in the order of `candidates`."""
    trace: RoutingTrace | None = None
    """Kept for `momor_metadata` when the call asked for it."""

    def elapsed_ms(self, since: float | None = None) -> int:
        return int((time.monotonic() - (since or self.started)) * 1000)


class Attempt:
    """One candidate tried: its target, and its record, filled in as the try goes."""

    def __init__(self, call: Call, candidate: Candidate) -> None:
        offering = candidate.offering
        self.call, self.candidate, self.started = call, candidate, time.monotonic()
        self.target: Target = target_of(candidate, stream=call.asked.options.stream)
        self.row = new_attempt(
            call.record,
            Offer(
                model=offering.model_id,
                provider=offering.provider.name,
                region=offering.region,
                upstream_id=offering.upstream_id,
                key_source=candidate.key_source,
                prices=offering.prices.as_dict(),
                offering_id=offering.id,
            ),
        )
        self.secrets: tuple[str, ...] = ()
        self.failure: Failure | None = None
        if call.trace is not None:  # kept for momor_metadata alone: a cycle the GC would collect
            call.tries.append(self)

    def failed(
        self, failure: Failure, *, decisive: bool = True, spent: TokenCounts | None = None
    ) -> Failure:
        """Note a failed try; a decisive one is what the call answers if it is the last.
        `spent`: the tokens of an answer the provider generated and Momor rejected, billed as
        the try's cost. Every secret sent upstream on this try is masked first: the failure
        returned is the one to answer with."""
        failure = self.failure = scrubbed(failure, (self.candidate.secret, *self.secrets))
        attempt_failed(self.row, failure.status, failure.message, self.elapsed_ms(), spent)
        if decisive:
            self.call.last = (self.candidate, failure)
        return failure

    def served(self, status: int, usage: Usage | None) -> None:
        attempt_served(self.row, status, tokens_of(usage), self.elapsed_ms())

    def outcome(self, usage: Usage | None, finish: str, native: str) -> Served:
        """What the call's record says of the answer this try served."""
        return self.outcome_with(tokens_of(usage), finish, native)

    def outcome_with(self, tokens: TokenCounts | None, finish: str, native: str) -> Served:
        offering = self.candidate.offering
        return Served(
            model=offering.model_id,
            provider=offering.place,
            finish_reason=finish,
            native_finish_reason=native,
            tokens=tokens,
            latency_ms=self.call.elapsed_ms(),
        )

    def elapsed_ms(self) -> int:
        return self.call.elapsed_ms(self.started)

    def add_cost(
        self, usage: CompletionUsage, *, estimated: bool = False, parsed: Usage | None = None
    ) -> None:
        """`usage.cost` (what the organization is charged for the call, in USD) and the other
        fields Momor adds to the answer's usage (`gateway.relay.answer_usage`)."""
        prices = self.candidate.offering.prices.as_dict()
        priced(usage, prices, self.candidate.key_source, estimated=estimated, parsed=parsed)

    def served_headers(self) -> dict[str, str]:
        offering = self.candidate.offering
        return {"x-momor-provider": offering.place, "x-momor-model": offering.model_id}


def tokens_of(usage: Usage | None) -> TokenCounts | None:
    return None if usage is None else token_counts(usage)


def scrubbed(failure: Failure, secrets: tuple[str, ...]) -> Failure:
    """The failure with these secrets (and anything shaped like a key) masked in its message
    and in every text field of its error object."""
    error = failure.error
    if error is not None:
        error = {
            "message": scrub(error["message"], secrets),
            "type": _scrubbed(error["type"], secrets),
            "param": _scrubbed(error["param"], secrets),
            "code": _scrubbed(error["code"], secrets),
        }
    return Failure(failure.status, scrub(failure.message, secrets), error)


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    """A field of a provider's error object, whose type the provider chose."""
    return scrub(value, secrets) if isinstance(value, str) else value


def transport_message(exc: BaseException) -> str:
    """What a try says when the connection failed it."""
    if isinstance(exc, TimeoutError):
        return "The provider did not answer in time."
    if isinstance(exc, UpstreamError) and exc.connect:
        return "The provider could not be reached."
    return "The provider closed the connection."
