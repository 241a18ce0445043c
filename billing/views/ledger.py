"""The owner's billing page: the balance and the credits ledger."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import Membership, Role
from accounts.permissions import role_required
from billing.models import LedgerEntry


@role_required(Role.OWNER)
def billing(request: HttpRequest, membership: Membership) -> HttpResponse:
    entries = LedgerEntry.objects.filter(organization=membership.organization).select_related(
        "generation"
    )
    page = Paginator(entries, 50).get_page(request.GET.get("page"))
    return render(request, "billing/billing.html", {"page": page})
