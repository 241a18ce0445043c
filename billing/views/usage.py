"""Usage charts: cost, tokens and calls per day, split by model, provider, calling app or API
called, for a period."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import Membership, Role
from accounts.permissions import role_required
from billing.usage.reads import daily_usage
from billing.views.forms import UsageForm


@role_required(Role.MEMBER)
def usage(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = UsageForm(request.GET)
    since, until = form.period()
    split = form.split_by()
    data = daily_usage(membership.organization_id, since, until, split)
    context = {
        "form": form,
        "usage": data,
        "charts": data.chart_data(),
        "table": data.per_series(),
        "since": since,
        "until": until,
        "split": split,
        "split_name": form.split_name(),
    }
    return render(request, "billing/usage.html", context)
