"""The audit trail of the members' UI and the management API: who acts on a request (the
management key that called the API, else the signed-in member) and the change they make."""

from __future__ import annotations

from contextlib import AbstractContextManager

from django.db import models
from django.http import HttpRequest
from rest_framework.request import Request

from accounts.models import ApiKey
from audit.actors import Actor
from audit.trail import Change, audited


def actor_of(request: HttpRequest | Request) -> Actor:
    key = getattr(request, "auth", None)
    if isinstance(key, ApiKey):
        return Actor.key(key.pk, key.prefix, key.created_by_id)
    return Actor.member(request.user)


def audited_on(
    request: HttpRequest | Request, action: str, obj: models.Model | None = None
) -> AbstractContextManager[Change]:
    """`audit.trail.audited` for the request's actor, from the request's address and agent."""
    origin = request._request if isinstance(request, Request) else request
    return audited(actor_of(request), action, obj, request=origin)
