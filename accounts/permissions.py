"""Who may do what in the members' UI. Every page works on the signed-in user's current
organization (the session's choice among their memberships) and asks for a least role:

- member: their own API keys, the organization's generations, usage and playground;
- admin: also every API key, saved provider keys, policy and members;
- owner: also billing (balance and ledger) and the organization itself."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, cast

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from accounts.models import Membership, Role

SESSION_ORG = "momor_org_id"  # the key gateway.edge.caller reads too
RANK = {Role.MEMBER: 0, Role.ADMIN: 1, Role.OWNER: 2}

P = ParamSpec("P")
View = Callable[Concatenate[HttpRequest, Membership, P], HttpResponse]


def at_least(membership: Membership, role: Role) -> bool:
    return RANK[Role(membership.role)] >= RANK[role]


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership of the organization chosen in the session, else the oldest one."""
    memberships = Membership.objects.filter(user_id=cast(int, request.user.pk)).select_related(
        "organization"
    )
    wanted = request.session.get(SESSION_ORG)
    chosen = memberships.filter(organization_id=wanted).first() if isinstance(wanted, int) else None
    return chosen or memberships.order_by("created_at", "pk").first()


def role_required(role: Role) -> Callable[[View[P]], Callable[..., HttpResponse]]:
    """Sign-in first; then the current membership, at least `role`, is passed to the view."""

    def decorate(view: View[P]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        @login_required
        def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
            membership = current_membership(request)
            if membership is None:
                return redirect("no-organization")
            if not at_least(membership, role):
                raise PermissionDenied(f"This page is for the organization's {role.label}s.")
            request.membership = membership  # type: ignore[attr-defined]  # for templates
            return view(request, membership, *args, **kwargs)

        return wrapped

    return decorate


def can_manage_member(actor: Membership, target: Membership, new_role: str | None = None) -> bool:
    """Admins manage members and admins; only owners touch owners or make them."""
    if actor.organization_id != target.organization_id or not at_least(actor, Role.ADMIN):
        return False
    if at_least(actor, Role.OWNER):
        return True
    return target.role != Role.OWNER and new_role != Role.OWNER


def can_see_all_keys(membership: Membership) -> bool:
    return at_least(membership, Role.ADMIN)
