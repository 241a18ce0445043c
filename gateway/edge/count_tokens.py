"""`POST /v1/messages/count_tokens`: how many input tokens a Messages call would take, as
Anthropic's API answers it (`{"input_tokens": N}`), for the model the call names.

The caller is known as a Messages call's is (`x-api-key` or `Authorization`), the body is
checked as a Messages body without `max_tokens`, and its candidates are found as the call's
would be, in the order the call would try them (selectors, provider preferences and sort,
policy, keys, the session's offering first). Counting is not a call: nothing is
generated, reserved, recorded or billed; it counts against the key's rate limit, as every
request that names a key does, and is refused with 429 past it. The count itself is
`gateway.relay.messages.count.input_tokens`: Anthropic's for an Anthropic offering, Momor's
estimate for any other."""

from __future__ import annotations

import logging
import secrets

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from billing.admission import RateState
from gateway.catalog.snapshot import Catalog
from gateway.catalog.state import STATE
from gateway.edge.caller import authenticate
from gateway.edge.completion import REQUEST_ID
from gateway.edge.entries import MESSAGES
from gateway.edge.messages import messages_key
from gateway.edge.views import error_response
from gateway.relay.admit import count_refused
from gateway.relay.messages.count import input_tokens
from gateway.request.call import json_object
from gateway.request.errors import (
    GatewayError,
    internal_error,
    request_too_large,
    unsupported_media_type,
)
from gateway.request.identity import Caller
from gateway.request.messages.call import MessagesCall, parse_count_call
from gateway.request.tags import tag_headers
from gateway.routing.candidates import Candidate, candidates, needs_of, nothing_answers
from gateway.routing.performance import ranking_figures
from gateway.routing.selectors import age_rules, resolve
from gateway.routing.sessions import session_pin, stick

log = logging.getLogger(__name__)


@csrf_exempt
async def count_tokens(request: HttpRequest) -> HttpResponse:
    request_id = secrets.token_hex(16)
    try:
        response = await _count(request)
    except GatewayError as exc:
        response = error_response(exc, MESSAGES)
    except Exception:
        log.exception("count_tokens %s failed inside Momor", request_id)
        response = error_response(internal_error(), MESSAGES)
    response[REQUEST_ID] = request_id
    return response


async def _count(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        raise GatewayError(405, "Use POST.", code="method_not_allowed")
    if request.content_type != "application/json":
        raise unsupported_media_type()
    raw = request.body
    if len(raw) > settings.MOMOR_MAX_BODY_BYTES:
        raise request_too_large(settings.MOMOR_MAX_BODY_BYTES)
    body = json_object(raw)
    caller = await authenticate(request, key=messages_key)
    rate = await _counted(caller)
    try:
        catalog = await STATE.ready()
        asked = parse_count_call(body, raw, catalog.places, tag_headers(request.headers))
        tokens = await input_tokens(asked, await _candidates(asked, caller, catalog))
    except GatewayError as exc:
        exc.headers = {**rate.headers(), **(exc.headers or {})}
        raise
    response = HttpResponse(orjson.dumps({"input_tokens": tokens}), content_type="application/json")
    for name, value in rate.headers().items():
        response[name] = value
    return response


async def _counted(caller: Caller) -> RateState:
    """The request counted against the key's window; 429 past its limit."""
    rate = await count_refused(caller)
    if rate.limit is not None and (rate.remaining or 0) < 0:
        raise GatewayError(
            429,
            f"Too many requests: this key may make {rate.limit} a minute.",
            type="rate_limit_error",
            code="rate_limit_exceeded",
            headers=rate.headers(),
        )
    return rate


async def _candidates(asked: MessagesCall, caller: Caller, catalog: Catalog) -> list[Candidate]:
    """The call's candidates in the order the call would try them."""
    options, org = asked.options, caller.org
    models = resolve(catalog, options.selectors, age_rules(options, org), "chat")
    if not models:
        raise nothing_answers(options)
    figures = await ranking_figures(models, options.prefs.sort)
    found = candidates(models, options, org, needs_of(asked), figures)
    session_id = asked.tags.session_id
    if session_id:
        found = stick(found, await session_pin(org.id, session_id))
    return found if options.prefs.allow_fallbacks else found[:1]
