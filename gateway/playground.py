"""The playground: the page only; answers stream from the real completions endpoint, called
by the browser with the member's session and CSRF token."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from accounts.models import Membership, Role
from accounts.permissions import role_required
from gateway.models import Model


def selectors() -> dict[str, list[str]]:
    """Model ids of the catalog, their tier selectors, and auto."""
    models = list(Model.objects.order_by("id").values_list("id", "tiers"))
    tiers = sorted({f"tier/{tier}" for _, names in models for tier in names or []})
    return {"models": [model_id for model_id, _ in models], "selectors": ["auto", *tiers]}


@ensure_csrf_cookie
@role_required(Role.MEMBER)
def playground(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(request, "gateway/playground.html", selectors())
