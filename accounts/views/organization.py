"""The organization itself: its page (the owner renames it), the switcher between a person's
organizations, and the page for someone of no organization."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.forms import OrganizationForm, SwitchForm
from accounts.models import Membership, Role
from accounts.permissions import SESSION_ORG, current_membership, role_required


@role_required(Role.OWNER)
def organization(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = OrganizationForm(request.POST or None, instance=membership.organization)
    if request.method == "POST" and form.is_valid():
        with audited_on(request, "update", membership.organization):
            form.save()
        messages.success(request, "Organization saved.")
        return redirect("organization")
    return render(
        request, "accounts/organization.html", {"form": form}, status=400 if form.errors else 200
    )


@login_required
def no_organization(request: HttpRequest) -> HttpResponse:
    if current_membership(request) is not None:
        return redirect("overview")
    return render(request, "accounts/no_organization.html")


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
