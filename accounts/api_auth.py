"""Who calls the management API: a management key (acting as an admin of its organization) or
a signed-in member's session (on the organization chosen in it, with their role)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol, cast

from django.db.models import Q
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import ApiKey, KeyKind, Organization, Role
from accounts.permissions import RANK, current_membership
from accounts.secrets import API_KEY_PREFIX, hash_api_key

LAST_USE_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class KeyPrincipal:
    """The caller behind a management key."""

    key: ApiKey
    is_authenticated: bool = True
    pk: None = None


@dataclass(frozen=True)
class Access:
    organization: Organization
    role: Role
    user_id: int | None
    key: ApiKey | None = None
    """The management key calling, if it is one (None on a session)."""

    def at_least(self, role: Role) -> bool:
        return RANK[self.role] >= RANK[role]


class ManagementKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[KeyPrincipal, ApiKey] | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        key = None
        if token.startswith(API_KEY_PREFIX):
            live = ApiKey.objects.active().select_related("organization")
            key = live.filter(key_hash=hash_api_key(token)).first()
        if key is None or key.kind != KeyKind.MANAGEMENT:
            raise AuthenticationFailed("Not a live management key.")
        _last_use_note(key)
        return KeyPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


def _last_use_note(key: ApiKey) -> None:
    """Move the key's last use to now, at most once a LAST_USE_EVERY: a script calling the API
    in a loop does not write the key's row on every call."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USE_EVERY:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USE_EVERY)
    ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)


def access_of(request: Request) -> Access:
    if isinstance(request.auth, ApiKey):
        # What a management key makes is its creator's: it lives and dies with them.
        key = request.auth
        return Access(key.organization, Role.ADMIN, key.created_by_id, key)
    membership = current_membership(request._request)
    if membership is None:
        raise PermissionDenied("You are not a member of any organization.")
    return Access(membership.organization, Role(membership.role), request.user.pk)


class _Admitted(Protocol):
    """A request HasOrganization let through: the access it found rides on it."""

    access: Access


def access_on(request: Request) -> Access:
    """The access HasOrganization found for `request`: every view it guards reads it here."""
    return cast(_Admitted, request).access


class HasOrganization(BasePermission):
    """Every route works on one organization; `least_role` on the view raises the bar."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 (no credentials), not "not a member" 403
        access = access_of(request)
        cast(_Admitted, request).access = access
        return access.at_least(getattr(view, "least_role", Role.MEMBER))
