"""The organization's routing policy: ZDR hold, deprecated default, maximum model age."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.acting import audited_on
from accounts.forms import PolicyForm
from accounts.models import Membership, Role
from accounts.permissions import role_required
from accounts.services import AccountError, organization_set_policy


@role_required(Role.ADMIN)
def policy(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.organization
    form = PolicyForm(request.POST) if request.method == "POST" else PolicyForm.of(org)
    if request.method == "POST" and form.is_valid():
        try:
            with audited_on(request, "update", org):
                organization_set_policy(organization=org, **form.cleaned_data)
        except AccountError as exc:
            form.add_error("max_model_age", str(exc))
        else:
            messages.success(request, "Policy saved: it applies to the next call.")
            return redirect("policy")
    return render(
        request, "accounts/policy.html", {"form": form}, status=400 if form.errors else 200
    )
