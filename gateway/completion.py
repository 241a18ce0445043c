"""The completions endpoint, free of any web framework: the Django view and the lean ASGI
route both call `complete`.

Once the caller is known, every way a call ends (served, refused, failed inside Momor, the
client gone at any point, admission included) hands its record to billing exactly once, and
the record carries the call's reservation, so the record writer releases or settles it: a
plain answer's record is handed off here, a stream's by its relay when the stream ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from typing import Any

import orjson
from django.conf import settings
from django.utils import timezone

from billing.admission import Ticket
from billing.recording import make_room, record_call
from billing.records import CallRecord
from gateway.admission import admit, count_refused
from gateway.caller import Caller
from gateway.errors import (
    GatewayError,
    internal_error,
    invalid_value,
    request_too_large,
    unsupported_media_type,
)
from gateway.ops import metrics
from gateway.ops.tracing import TRACER
from gateway.options import CallOptions, read_options, strip_routing
from gateway.relay import Answer, Call, answer
from gateway.routing import Candidate, candidates, needs_of, nothing_answers
from gateway.selectors import AgeRules, resolve
from gateway.snapshot import Catalog
from gateway.state import STATE
from gateway.worst_case import worst_cost

log = logging.getLogger(__name__)

REQUEST_ID = "X-Momor-Request-Id"
# orjson writes JSON at most this deep: a deeper body parses, but no adapter could send it on.
MAX_DEPTH = 254


async def complete(
    request_id: str,
    method: str,
    content_type: str,
    raw: bytes,
    authenticate: Callable[[], Awaitable[Caller]],
    traceparent: str = "",
) -> Answer:
    """One call to the completions endpoint, checked in the spec's order, routed and answered;
    raises GatewayError for every refusal. `traceparent` is the caller's W3C trace header."""
    if method != "POST":
        raise GatewayError(405, "Use POST.", code="method_not_allowed")
    if content_type != "application/json":
        raise unsupported_media_type()
    if len(raw) > settings.MOMOR_MAX_BODY_BYTES:
        raise request_too_large(settings.MOMOR_MAX_BODY_BYTES)
    body = _json_object(raw)
    await make_room()
    caller = await authenticate()
    record = _new_record(request_id, caller, body)
    TRACER.begin(record, traceparent)
    try:
        answered = await _route(body, raw, caller, record)
    except GatewayError as exc:
        await _refused(record, exc)
        raise
    except asyncio.CancelledError:
        record.status, record.error = "cancelled", "The client went away before the answer."
        await _hand_off(record)
        raise
    except Exception as exc:
        log.exception("completions call %s failed inside Momor", request_id)
        await _failed_inside(record, exc)
        raise internal_error() from None
    if isinstance(answered.body, bytes):
        await _hand_off(record)  # durable before the body is sent
    return answered


async def _hand_off(record: CallRecord) -> None:
    """The call's record to billing (which settles its reservation): the one hand-off of this
    module, made once per call, and awaited before the answer or the error is sent (the
    record and charge are durable first)."""
    await record_call(record)


async def _route(body: dict[str, Any], raw: bytes, caller: Caller, record: CallRecord) -> Answer:
    catalog = await STATE.ready()
    try:
        options, found = _plan(body, raw, catalog, caller, record)
    except GatewayError as exc:
        raise _with_headers(exc, (await count_refused(caller)).headers()) from None
    ticket = await _reserve(caller, record, worst_cost(body, len(raw), found))
    call = Call(record.request_id, strip_routing(body), len(raw), options, found, record)
    try:
        answered = await answer(call)
    except GatewayError as exc:
        raise _with_headers(exc, ticket.rate.headers()) from None
    answered.headers.update(ticket.rate.headers())
    return answered


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


def _plan(
    body: dict[str, Any], raw: bytes, catalog: Catalog, caller: Caller, record: CallRecord
) -> tuple[CallOptions, list[Candidate]]:
    """The call's routing fields and its candidates, in the order they are tried."""
    _check_depth(body, raw)
    options = read_options(body, catalog.places)
    record.selectors, record.streamed = list(options.selectors), options.stream
    models = resolve(catalog, options.selectors, _age_rules(options, caller))
    if not models:
        raise nothing_answers(options)
    return options, candidates(models, options, caller.org, needs_of(body))


def _with_headers(exc: GatewayError, headers: dict[str, str]) -> GatewayError:
    exc.headers = {**headers, **(exc.headers or {})}
    return exc


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise invalid_value("The body is not a JSON object: it does not parse as JSON.") from None
    if not isinstance(body, dict):
        raise invalid_value("The body is not a JSON object.")
    return body


def _check_depth(body: dict[str, Any], raw: bytes) -> None:
    """Refuse a body nested deeper than Momor can send on; a body with fewer brackets than
    that cannot be, so only the rare one with many is encoded to find out."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    try:
        orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise invalid_value(
            f"The body nests arrays and objects more than {MAX_DEPTH} levels deep; "
            "Momor cannot send it on."
        ) from None


def _age_rules(options: CallOptions, caller: Caller) -> AgeRules:
    prefs, org = options.prefs, caller.org
    return AgeRules(
        allow_deprecated=org.allow_deprecated if prefs.deprecated is None else prefs.deprecated,
        max_age=prefs.max_age if prefs.max_age_given else org.max_age,
        today=date.today(),  # noqa: DTZ011 - release dates are calendar days
    )


def _new_record(request_id: str, caller: Caller, body: dict[str, Any]) -> CallRecord:
    return CallRecord(
        request_id=request_id,
        organization_id=caller.org.id,
        api_key_id=caller.key.id if caller.key else None,
        user_id=caller.user_id,
        selectors=[],
        streamed=body.get("stream") is True,
        created_at=timezone.now(),
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
