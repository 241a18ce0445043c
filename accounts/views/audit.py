"""The audit trail of the organization, for owners and admins: every change made by its
members, its management keys, the operators and their commands, filtered, paginated and
exported as CSV."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounts.audit_filters import AuditFilterForm, events_csv, filtered, organization_events
from accounts.models import Membership, Role
from accounts.permissions import role_required


def _criteria(request: HttpRequest, membership: Membership) -> tuple[AuditFilterForm, Any]:
    events = organization_events(membership.organization_id)
    form = AuditFilterForm(request.GET, events=events)
    if not form.is_valid():
        return form, events.none()
    return form, filtered(events, form.cleaned_data)


@role_required(Role.ADMIN)
def audit_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form, events = _criteria(request, membership)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {"form": form, "page": page, "query": query.urlencode()}
    status = 400 if form.errors else 200
    return render(request, "accounts/audit.html", context, status=status)


@role_required(Role.ADMIN)
def audit_export(request: HttpRequest, membership: Membership) -> HttpResponse:
    _, events = _criteria(request, membership)
    response = StreamingHttpResponse(events_csv(events), content_type="text/csv")
    moment = timezone.now().strftime("%Y%m%d-%H%M%S")
    name = f"{membership.organization.slug}-audit-{moment}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response  # type: ignore[return-value]  # streamed: no HttpResponse, but served as one
