"""The Django views of the gateway: the completions endpoint (for every caller; the lean ASGI
route takes the Bearer-key calls first when it is on) and the models list."""

from __future__ import annotations

import logging
import secrets

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from gateway.catalog.state import STATE
from gateway.edge.caller import authenticate
from gateway.edge.completion import REQUEST_ID, complete
from gateway.edge.entries import BY_PATH, CHAT, Entry
from gateway.edge.models_list import models_payload
from gateway.relay.attempts import Answer
from gateway.request.errors import GatewayError, internal_error
from gateway.request.tags import tag_headers

log = logging.getLogger(__name__)


@csrf_exempt
async def call(request: HttpRequest) -> HttpResponseBase:
    """A call on any of the calls' routes (`gateway.edge.entries`), by its path."""
    entry = BY_PATH[request.path]
    request_id = secrets.token_hex(16)
    response: HttpResponseBase
    try:
        answer = await complete(
            request_id,
            request.method or "",
            request.content_type or "",
            request.body,
            lambda: authenticate(request, key=entry.key),
            tag_headers(request.headers),
            request.headers.get("traceparent", ""),
            entry,
        )
        response = _http(answer)
    except GatewayError as exc:
        response = error_response(exc, entry)
    except Exception:
        log.exception("%s call %s failed inside Momor", entry.api, request_id)
        response = error_response(internal_error(), entry)
    response[REQUEST_ID] = request_id
    return response


def _http(answer: Answer) -> HttpResponseBase:
    response: HttpResponseBase
    if isinstance(answer.body, bytes):
        response = HttpResponse(answer.body, status=answer.status, content_type="application/json")
    else:
        response = StreamingHttpResponse(
            answer.body, status=answer.status, content_type="text/event-stream"
        )
        response["X-Accel-Buffering"] = "no"
    for name, value in answer.headers.items():
        response[name] = value
    return response


def error_response(exc: GatewayError, entry: Entry = CHAT) -> HttpResponse:
    """A refusal in the entry's shape (OpenAI's error object unless given)."""
    status, body = entry.error(exc)
    response = HttpResponse(body, status=status, content_type="application/json")
    for name, value in (exc.headers or {}).items():
        response[name] = value
    return response


async def models(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return error_response(GatewayError(405, "Use GET.", code="method_not_allowed"))
    catalog = await STATE.ready()
    figures = await _known_caller(request)
    return HttpResponse(await models_payload(catalog, figures), content_type="application/json")


async def _known_caller(request: HttpRequest) -> bool:
    """Whether the list may carry the offerings' measured figures: they count every tenant's
    calls, so a caller without a key or a session sees none."""
    try:
        await authenticate(request, records_only=True)
    except GatewayError:
        return False
    return True
