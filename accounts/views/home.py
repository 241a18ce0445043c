"""The overview page, the organization switcher and the page for users of no organization."""

from __future__ import annotations

from datetime import timedelta
from typing import cast

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.forms import SwitchForm
from accounts.models import ApiKey, Membership, Role
from accounts.permissions import SESSION_ORG, can_see_all_keys, current_membership, role_required
from billing.models import Generation


@role_required(Role.MEMBER)
def overview(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.organization
    month = Generation.objects.filter(
        organization=org, created_at__gte=timezone.now() - timedelta(days=30)
    ).aggregate(calls=Count("pk"), cost=Sum("cost"))
    keys = ApiKey.objects.active().filter(organization=org)
    if not can_see_all_keys(membership):
        keys = keys.filter(created_by_id=request.user.pk)
    context = {
        "month": month,
        "active_keys": keys.count(),
        "recent": Generation.objects.filter(organization=org).order_by("-created_at")[:8],
    }
    return render(request, "ui/overview.html", context)


@login_required
def no_organization(request: HttpRequest) -> HttpResponse:
    if current_membership(request) is not None:
        return redirect("overview")
    return render(request, "ui/no_organization.html")


@require_POST
@login_required
def switch_organization(request: HttpRequest) -> HttpResponse:
    form = SwitchForm(request.POST)
    if form.is_valid():
        wanted = form.cleaned_data["organization"]
        mine = Membership.objects.filter(user_id=cast(int, request.user.pk))
        if mine.filter(organization_id=wanted).exists():
            request.session[SESSION_ORG] = wanted
    return redirect("overview")
