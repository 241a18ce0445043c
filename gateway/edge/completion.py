"""The completions endpoint, free of any web framework: the Django view and the lean ASGI
route both call `complete`.

Once the caller is known, every way a call ends (served, refused, failed inside Momor, the
client gone at any point, admission included) hands its record to billing exactly once, and
the record carries the call's reservation, so the record writer releases or settles it: a
plain answer's record is handed off here, a stream's by `gateway.relay.streaming` when it ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings

from billing.admission import Ticket
from billing.calls.records import CallRecord
from billing.recording.hand_off import make_room, record_call
from gateway.catalog.snapshot import Catalog
from gateway.catalog.state import STATE
from gateway.edge.entries import CHAT, Entry
from gateway.edge.request_ids import request_id_claim, reused
from gateway.ops import metrics
from gateway.ops.tracing import TRACER
from gateway.relay.admit import admit, count_refused
from gateway.relay.attempts import Answer, Call
from gateway.relay.embedding import embed
from gateway.relay.failover import answer
from gateway.relay.messages.relay import answer_messages
from gateway.relay.metadata import ended_metadata, refusal_metadata, wanted
from gateway.relay.responses.relay import respond
from gateway.relay.worst_case import worst_cost
from gateway.request.call import (
    AskedCall,
    ChatCall,
    EmbeddingCall,
    json_object,
)
from gateway.request.errors import (
    GatewayError,
    internal_error,
    request_too_large,
    unsupported_media_type,
)
from gateway.request.identity import Caller, now
from gateway.request.messages.call import MessagesCall
from gateway.request.options import CallOptions, requested_selectors
from gateway.request.responses import ResponsesCall
from gateway.request.tags import NO_TAGS, CallTags
from gateway.routing import candidate_cache
from gateway.routing.candidates import Candidate, Needs, Plan, candidates, needs_of, nothing_answers
from gateway.routing.performance import ranking_figures
from gateway.routing.selectors import AgeRules, age_rules, resolve
from gateway.routing.sessions import pin_of, session_moves, session_pin, stick
from gateway.routing.trace import RoutingTrace

log = logging.getLogger(__name__)


REQUEST_ID = "X-Momor-Request-Id"
CLIENT_REQUEST_ID = "X-Request-Id"
RATE_LIMIT = "X-RateLimit-Limit"


async def complete(
    request_id: str,
    method: str,
    content_type: str,
    raw: bytes,
    authenticate: Callable[[], Awaitable[Caller]],
    headers: Mapping[str, str] | None = None,
    traceparent: str = "",
    entry: Entry = CHAT,
) -> Answer:
    """One call to one of the calls' routes (`entry`: the completions endpoint unless given),
    checked in the spec's order, routed and answered in the entry's shape; raises GatewayError
    for every refusal. `headers`: the call's tag headers (X-Request-Id, X-Session-Id, HTTP-Referer,
    X-Title) by lowercase name; `traceparent`: the caller's W3C trace header. Once the caller
    is known, every answer carries the rate-limit headers."""
    if method != "POST":
        raise GatewayError(405, "Use POST.", code="method_not_allowed")
    if content_type != "application/json":
        raise unsupported_media_type()
    if len(raw) > settings.MOMOR_MAX_BODY_BYTES:
        raise request_too_large(settings.MOMOR_MAX_BODY_BYTES)
    body = json_object(raw)
    await make_room()
    caller = await authenticate()
    record = _new_record(request_id, caller, body)
    record.api = entry.api
    TRACER.begin(record, traceparent)
    route = Route(raw, caller, record, headers or {}, entry)
    try:
        answered = await _route(route, body)
    except GatewayError as exc:
        await _rated(exc, route)
        await _refused(record, exc)
        raise
    except asyncio.CancelledError:
        await _cancelled(route)
        raise
    except Exception as exc:
        log.exception("completions call %s failed inside Momor", request_id)
        await _failed_inside(record, exc)
        raise await _rated(internal_error(), route) from None
    answered.headers.update(route.echo)
    if isinstance(answered.body, bytes):
        await _hand_off(record)  # durable before the body is sent
    return answered


class Route:
    """One call on its way: what it sent, what routing found, and what its answer echoes."""

    def __init__(
        self,
        raw: bytes,
        caller: Caller,
        record: CallRecord,
        headers: Mapping[str, str],
        entry: Entry,
    ) -> None:
        self.raw, self.caller, self.record, self.entry = raw, caller, record, entry
        self.headers = headers
        self.tags = NO_TAGS
        self.plan = Plan()
        self.echo: dict[str, str] = {}
        self.trace = RoutingTrace() if wanted(headers) else None
        self.answered: Answer | None = None
        """The answer once a candidate gave it (a stream's is under way: it hands the record
        off itself when it closes)."""


async def _rated(exc: GatewayError, route: Route) -> GatewayError:
    """The refusal with the rate-limit headers (counting the call if admission did not) and
    the echoed X-Request-Id."""
    exc.headers = {**route.echo, **(exc.headers or {})}
    if RATE_LIMIT not in exc.headers:
        ticket = route.record.ticket
        rate = ticket.rate if ticket is not None else await count_refused(route.caller)
        exc.headers.update(rate.headers())
    return exc


async def _cancelled(route: Route) -> None:
    """The client went away. A stream already under way is closed, which hands its record off
    (cancelled, billed for what it generated); any other call's record is handed off here."""
    answered = route.answered
    if answered is not None and not isinstance(answered.body, bytes):
        await answered.body.aclose()  # type: ignore[attr-defined]  # an async generator
        return
    record = route.record
    record.status, record.error = "cancelled", "The client went away before the answer."
    await _hand_off(record)


async def _hand_off(record: CallRecord) -> None:
    """The call's record to billing (which settles its reservation): the one hand-off of this
    module, made once per call, and awaited before the answer or the error is sent (the
    record and charge are durable first)."""
    await record_call(record)


async def _route(route: Route, body: dict[str, Any]) -> Answer:
    caller, record = route.caller, route.record
    try:
        catalog = await STATE.ready()
        asked = _parsed(route, body, catalog.places)
        found = await _planned(route, catalog, asked)
    except GatewayError as exc:
        if route.trace is not None:
            _explained(exc, refusal_metadata(route.trace))
        rate = await count_refused(caller)
        await _claim(route, rate.headers())
        raise _with_headers(exc, rate.headers()) from None
    ticket = await _admitted(route, worst_cost(asked, found))
    call = Call(record.request_id, asked, found, record)
    call.trace = route.trace
    try:
        answered = route.entry.shaped(await _answer(call, asked), asked)
    except GatewayError as exc:
        _explained(exc, ended_metadata(call, None))
        raise _with_headers(exc, ticket.rate.headers()) from None
    answered.headers.update(ticket.rate.headers())
    route.answered = answered
    await _session_moves(route, found)
    return answered


async def _answer(call: Call, asked: AskedCall) -> Answer:
    if type(asked) is ChatCall:  # the common call first, before its subclasses are looked for
        return await answer(call, asked)
    if isinstance(asked, EmbeddingCall):
        return await embed(call, asked)
    if isinstance(asked, MessagesCall):
        return await answer_messages(call, asked)
    if isinstance(asked, ResponsesCall):
        return await respond(call, asked)
    if isinstance(asked, ChatCall):
        return await answer(call, asked)
    raise TypeError(f"no relay answers {asked.api} calls")


def _parsed(route: Route, body: dict[str, Any], places: frozenset[str]) -> AskedCall:
    """The call parsed once, its record told what it asked (a refused call's too, as far as
    it reads)."""
    record = route.record
    record.selectors = requested_selectors(body)
    asked = route.entry.parse(body, route.raw, places, route.headers)
    record.selectors, record.streamed = list(asked.options.selectors), asked.options.stream
    _tagged(route, asked.tags)
    return asked


async def _planned(route: Route, catalog: Catalog, asked: AskedCall) -> list[Candidate]:
    """The call's candidates in the order they are tried: a session's own offering first, and
    only the first where the call allows no fallbacks."""
    caller, record = route.caller, route.record
    options, tags = asked.options, asked.tags
    rules = age_rules(options, caller.org)
    needs = needs_of(asked)
    key = candidate_cache.key_of(options, rules, needs) if route.trace is None else None
    routed = candidate_cache.kept(key, catalog, caller.org) if key is not None else None
    if routed is None:
        routed = await _routed(route, catalog, options, rules, needs)
        if key is not None:
            candidate_cache.keep(key, routed)
    route.plan.excluded, route.plan.by_price = list(routed.excluded), routed.by_price
    record.routing = {"provider": routed.given, "excluded": route.plan.excluded}
    found = routed.found
    pin = await session_pin(caller.org.id, tags.session_id) if tags.session_id else None
    found = stick(found, pin)
    if route.trace is not None:
        route.trace.routed(found, pin)
    if not options.prefs.allow_fallbacks:
        found = found[:1]
    return found


async def _routed(
    route: Route, catalog: Catalog, options: CallOptions, rules: AgeRules, needs: Needs
) -> candidate_cache.Routed:
    """The call's candidates from the catalog, and what the filters left out."""
    caller, trace = route.caller, route.trace
    if trace is not None:
        trace.catalog, trace.options, trace.rules = catalog, options, rules
        trace.needs, trace.org, trace.plan = needs, caller.org, route.plan
    models = resolve(catalog, options.selectors, rules, needs.kind)
    if trace is not None:
        trace.models = models
    if not models:
        raise nothing_answers(options)
    figures = await ranking_figures(models, options.prefs.sort)
    plan, given = route.plan, options.prefs.given()
    route.record.routing = {"provider": given, "excluded": plan.excluded}  # a refusal's too
    found = candidates(models, options, caller.org, needs, figures, plan)
    return candidate_cache.Routed(catalog, caller.org, found, plan.excluded, plan.by_price, given)


def _tagged(route: Route, tags: CallTags) -> None:
    route.tags = tags
    if tags.request_id:
        route.echo[CLIENT_REQUEST_ID] = tags.request_id
    record = route.record
    record.session_id, record.app, record.referer = tags.session_id, tags.app, tags.referer


async def _admitted(route: Route, amount: Decimal) -> Ticket:
    """Admission, then the X-Request-Id claim: a rate-limit refusal takes precedence and
    claims nothing."""
    try:
        ticket = await _reserve(route.caller, route.record, amount)
    except GatewayError as exc:
        if exc.status != 429:
            await _claim(route, exc.headers or {})
        raise
    await _claim(route, ticket.rate.headers())
    return ticket


async def _claim(route: Route, headers: dict[str, str]) -> None:
    """Claim the call's X-Request-Id; one an earlier call of the organization sent is refused."""
    client_id = route.tags.request_id
    if not client_id:
        return
    record = route.record
    if not await request_id_claim(record.organization_id, client_id, record.request_id):
        raise _with_headers(reused(client_id), headers)
    record.client_request_id = client_id


async def _session_moves(route: Route, found: list[Candidate]) -> None:
    """The session now stays on the offering and key that served it."""
    session_id, record = route.tags.session_id, route.record
    if not session_id or not record.attempts:
        return
    served = record.attempts[-1]
    for candidate in found:
        offering = candidate.offering
        if (offering.model_id, offering.provider.name, offering.region, candidate.key_source) == (
            served.model,
            served.provider,
            served.region,
            served.key_source,
        ):
            await session_moves(record.organization_id, session_id, pin_of(candidate))
            return


async def _reserve(caller: Caller, record: CallRecord, amount: Decimal) -> Ticket:
    """Admit the call and attach its reservation to its record; a client that goes away while
    admission runs does not stop it, so a reservation made is attached all the same (and
    released with the record) instead of being held until it expires."""
    admitting = asyncio.ensure_future(admit(caller, record.request_id, amount))
    try:
        record.ticket = await asyncio.shield(admitting)
    except asyncio.CancelledError:
        await asyncio.wait({admitting})
        if not admitting.cancelled() and admitting.exception() is None:
            record.ticket = admitting.result()
            metrics.reserved()
        raise
    metrics.reserved()
    return record.ticket


def _explained(exc: GatewayError, metadata: dict[str, Any] | None) -> None:
    if metadata is not None:
        exc.extra = {**(exc.extra or {}), "momor_metadata": metadata}


def _with_headers(exc: GatewayError, headers: dict[str, str]) -> GatewayError:
    exc.headers = {**headers, **(exc.headers or {})}
    return exc


def _new_record(request_id: str, caller: Caller, body: dict[str, Any]) -> CallRecord:
    return CallRecord(
        request_id=request_id,
        organization_id=caller.org.id,
        api_key_id=caller.key.id if caller.key else None,
        user_id=caller.user_id,
        selectors=[],
        streamed=body.get("stream") is True,
        created_at=now(),
    )


async def _refused(record: CallRecord, exc: GatewayError) -> None:
    """Recorded before the error is sent."""
    record.status = "failed" if record.attempts else "refused"
    record.http_status = exc.status
    record.error = exc.message
    await _hand_off(record)


async def _failed_inside(record: CallRecord, exc: Exception) -> None:
    record.status, record.http_status = "failed", 500
    record.error = f"Momor failed to handle this call ({type(exc).__name__}); it has been logged."
    await _hand_off(record)
