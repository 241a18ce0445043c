"""`GET /v1/generation?id=...`: a call's record, for the organization that made it."""

from __future__ import annotations

import orjson
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from billing.usage.lookup import generation_detail
from core import dbthread
from gateway.edge.caller import authenticate
from gateway.edge.views import error_response
from gateway.request.errors import GatewayError, invalid_value, service_unavailable

# A call's id is 32 characters; room for a longer one some day.
ID_CHARS = 64


async def generation(request: HttpRequest) -> HttpResponse:
    try:
        return await _generation(request)
    except GatewayError as exc:
        return error_response(exc)


async def _generation(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        raise GatewayError(405, "Use GET.", code="method_not_allowed")
    # A Messages answer's id is the request id after `msg_`.
    request_id = request.GET.get("id", "").strip().removeprefix("msg_")
    if not request_id:
        raise invalid_value("Name the generation: ?id=<the call's id>.")
    if len(request_id) > ID_CHARS:
        raise invalid_value(f"'id' is a call's id, at most {ID_CHARS} characters.")
    caller = await authenticate(request, records_only=True)
    try:
        found = await dbthread.lookup(lambda: generation_detail(request_id, caller.org.id))
    except DatabaseError:
        raise service_unavailable(
            "Momor cannot read the records right now; retry shortly."
        ) from None
    if found is None:
        raise GatewayError(
            404,
            f"No generation {request_id} is recorded for this organization (yet: a call's "
            "record is written within a second of its end).",
            code="generation_not_found",
        )
    return HttpResponse(orjson.dumps({"data": found}), content_type="application/json")
