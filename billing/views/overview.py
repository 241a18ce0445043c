"""The overview: the organization's calls and spend over the last 30 days (today included),
its active keys, and its recent generations."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounts.models import ApiKey, Membership, Role
from accounts.permissions import can_see_all_keys, role_required
from billing.models import Generation
from billing.usage.reads import usage_totals


@role_required(Role.MEMBER)
def overview(request: HttpRequest, membership: Membership) -> HttpResponse:
    generations = Generation.objects.for_org(membership.organization_id)
    keys = ApiKey.objects.active().filter(organization_id=membership.organization_id)
    if not can_see_all_keys(membership):
        keys = keys.filter(created_by_id=request.user.pk)
    today = timezone.localdate()
    context = {
        "month": usage_totals(membership.organization_id, today - timedelta(days=29), today),
        "active_keys": keys.count(),
        "recent": generations.order_by("-created_at")[:8],
    }
    return render(request, "billing/overview.html", context)
