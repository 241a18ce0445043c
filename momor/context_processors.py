"""The members' UI layout's context, on every page: the organizations to switch between and the
current role (templates/ui/layout.html draws the sidebar from it)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts.models import Membership, Role
from accounts.permissions import at_least, current_membership


def layout(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_authenticated:
        return {}
    membership: Membership | None = getattr(request, "membership", None)
    membership = membership or current_membership(request)
    if membership is None:
        return {"memberships": []}
    memberships = Membership.objects.filter(user_id=request.user.pk).select_related("organization")
    return {
        "memberships": memberships.order_by("organization__name"),
        "current": membership,
        "is_admin": at_least(membership, Role.ADMIN),
        "is_owner": at_least(membership, Role.OWNER),
    }
