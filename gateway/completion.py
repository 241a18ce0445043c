"""The completions endpoint, free of any web framework: the Django view and the lean ASGI
route both call `complete`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any

import orjson
from django.conf import settings
from django.utils import timezone

from billing.recording import make_room, record_call
from billing.records import CallRecord
from gateway.admission import admit, count_refused, worst_cost
from gateway.caller import Caller
from gateway.errors import (
    GatewayError,
    invalid_value,
    request_too_large,
    unsupported_media_type,
)
from gateway.options import CallOptions, read_options, strip_routing
from gateway.relay import Answer, Call, answer
from gateway.routing import Candidate, candidates, needs_of, nothing_answers
from gateway.selectors import AgeRules, resolve
from gateway.snapshot import Catalog
from gateway.state import STATE

REQUEST_ID = "X-Momor-Request-Id"


async def complete(
    request_id: str,
    method: str,
    content_type: str,
    raw: bytes,
    authenticate: Callable[[], Awaitable[Caller]],
) -> Answer:
    """One call to the completions endpoint, checked in the spec's order, routed and answered;
    raises GatewayError for every refusal."""
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
    try:
        return await _route(body, len(raw), caller, record)
    except GatewayError as exc:
        await _refused(record, exc)
        raise
    except asyncio.CancelledError:
        record.status, record.error = "cancelled", "The client went away before the answer."
        await record_call(record)
        raise


async def _route(body: dict[str, Any], size: int, caller: Caller, record: CallRecord) -> Answer:
    catalog = await STATE.ready()
    try:
        options, found = _plan(body, catalog, caller, record)
    except GatewayError as exc:
        raise _with_headers(exc, (await count_refused(caller)).headers()) from None
    ticket = await admit(caller, record.request_id, worst_cost(body, size, found))
    record.ticket = ticket
    call = Call(record.request_id, strip_routing(body), size, options, found, record)
    try:
        answered = await answer(call)
    except GatewayError as exc:
        raise _with_headers(exc, ticket.rate.headers()) from None
    answered.headers.update(ticket.rate.headers())
    return answered


def _plan(
    body: dict[str, Any], catalog: Catalog, caller: Caller, record: CallRecord
) -> tuple[CallOptions, list[Candidate]]:
    """The call's routing fields and its candidates, in the order they are tried."""
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
    await record_call(record)
