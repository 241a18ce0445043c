"""Who is calling: a Bearer Momor key, or a signed-in member's session (with its CSRF token).
A key already known needs no query; an unknown one is looked up once; if the database cannot
answer, the call gets 503, never 401."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

from accounts.permissions import current_membership
from accounts.secrets import API_KEY_PREFIX, hash_api_key
from core import dbthread
from gateway.catalog.state import STATE
from gateway.request.errors import GatewayError, invalid_api_key, service_unavailable
from gateway.request.identity import Caller, KeyInfo, now

T = TypeVar("T")


async def authenticate(
    request: HttpRequest,
    *,
    records_only: bool = False,
    key: Callable[[Mapping[bytes, bytes]], str | None] | None = None,
) -> Caller:
    """The caller of a call, or (records_only) of a read of the records, which management keys
    may make too. `key`: where the call's route reads its key (`Entry.key`); the
    `Authorization` header unless given."""
    header = request.headers.get("authorization")
    if key is not None:
        header = key(
            {n.lower().encode("latin-1"): v.encode("latin-1") for n, v in request.headers.items()}
        )
    if header:
        return await authenticate_bearer(header, records_only=records_only)
    if settings.SESSION_COOKIE_NAME in request.COOKIES:
        return await _by_session(request)
    raise invalid_api_key("No API key: send it as 'Authorization: Bearer <key>'.")


async def authenticate_bearer(header: str, *, records_only: bool = False) -> Caller:
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token.startswith(API_KEY_PREFIX):
        raise invalid_api_key()
    key = await _key(hash_api_key(token))
    if key is None or not key.usable(now()) or not (key.calls_gateway or records_only):
        raise invalid_api_key()
    org = STATE.identities.org_for(key.organization_id)
    if org is None:
        org = await _guarded(lambda: STATE.identities.load_org(key.organization_id))
    if org is None:
        raise invalid_api_key()
    return Caller(org, key, None)


async def _key(key_hash: str) -> KeyInfo | None:
    identities = STATE.identities
    known = identities.keys.get(key_hash)
    if known is not None:
        return known
    if identities.known_missing(key_hash):
        return None
    return await _guarded(lambda: identities.load_key(key_hash))


async def _guarded(lookup: Callable[[], T]) -> T:
    try:
        return await dbthread.lookup(lookup)
    except DatabaseError:
        raise service_unavailable("Momor cannot check this key right now; retry shortly.") from None


async def _by_session(request: HttpRequest) -> Caller:
    user = await request.auser()
    if not user.is_authenticated:
        raise invalid_api_key("No API key, and the session is not signed in.")
    if CsrfViewMiddleware(_no_view).process_view(request, _no_view, (), {}) is not None:
        raise invalid_api_key("A call on a session must carry its CSRF token (X-CSRFToken).")
    membership = await _guarded(lambda: current_membership(request))
    if membership is None:
        raise GatewayError(
            403, "You are not a member of any organization.", type="permission_error"
        )
    org = await _guarded(lambda: STATE.identities.load_org(membership.organization_id))
    if org is None:
        raise invalid_api_key()
    return Caller(org, None, user.pk)


def _no_view(request: HttpRequest) -> HttpResponse:
    """Stands for the view and the rest of the chain: the CSRF check calls neither."""
    return HttpResponse(status=204)
