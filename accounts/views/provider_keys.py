"""Saved provider keys (bring your own key): add or replace for a provider or name@region,
remove. A saved secret is never shown again beyond its last four characters."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.forms import SavedKeyForm
from accounts.models import Membership, Role, SavedKey
from accounts.permissions import role_required
from accounts.services import AccountError, saved_key_save


@sensitive_post_parameters("secret")
@role_required(Role.ADMIN)
def provider_key_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = SavedKeyForm(request.POST or None, initial={"provider": request.GET.get("provider")})
    if request.method == "POST" and form.is_valid():
        org = membership.organization
        replaced = SavedKey.objects.filter(
            organization=org, provider=form.cleaned_data["provider"]
        ).first()
        try:
            with audited_on(request, "save", replaced) as change:
                change.obj = saved = saved_key_save(organization=org, **form.cleaned_data)
        except AccountError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Key for {saved.provider} saved.")
            return redirect("provider-keys")
    context = {
        "saved_keys": SavedKey.objects.filter(organization=membership.organization),
        "form": form,
    }
    return render(
        request, "accounts/provider_keys.html", context, status=400 if form.errors else 200
    )


@require_POST
@role_required(Role.ADMIN)
def provider_key_remove(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    saved = get_object_or_404(SavedKey, organization=membership.organization, pk=pk)
    with audited_on(request, "delete", saved):
        saved.delete()
    messages.success(request, f"Key for {saved.provider} removed.")
    return redirect("provider-keys")
