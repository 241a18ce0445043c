"""The owner's pages: billing (balance and credits ledger) and the organization itself."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.forms import OrganizationForm
from accounts.models import Membership, Role
from accounts.permissions import role_required
from billing.models import LedgerEntry


@role_required(Role.OWNER)
def billing(request: HttpRequest, membership: Membership) -> HttpResponse:
    entries = LedgerEntry.objects.filter(organization=membership.organization).select_related(
        "generation"
    )
    page = Paginator(entries, 50).get_page(request.GET.get("page"))
    return render(request, "ui/billing.html", {"page": page})


@role_required(Role.OWNER)
def organization(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = OrganizationForm(request.POST or None, instance=membership.organization)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Organization saved.")
        return redirect("organization")
    return render(
        request, "ui/organization.html", {"form": form}, status=400 if form.errors else 200
    )
