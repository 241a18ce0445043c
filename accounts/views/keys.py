"""API keys: list with spend, limits and budgets, create (the secret shown once), set limits,
revoke. Members see and manage the keys they created; admins and owners every key of the
organization."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.forms import ApiKeyCreateForm, ApiKeyLimitsForm
from accounts.hooks import key_spend
from accounts.models import ApiKey, Budget, BudgetPeriod, Membership, Role
from accounts.permissions import at_least, can_see_all_keys, role_required
from accounts.services import AccountError, api_key_create, api_key_update
from accounts.views.budgets import rows_by
from accounts.views.helpers import errors_sentence, is_htmx


def _keys(request: HttpRequest, membership: Membership) -> QuerySet[ApiKey]:
    keys = ApiKey.objects.filter(organization=membership.organization)
    if not can_see_all_keys(membership):
        keys = keys.filter(created_by_id=request.user.pk)
    return keys


@role_required(Role.MEMBER)
def key_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = ApiKeyCreateForm(request.POST or None)
    new_secret = None
    if request.method == "POST" and form.is_valid():
        try:
            with audited_on(request, "create") as change:
                new_secret, change.obj = api_key_create(
                    organization=membership.organization,
                    created_by=cast(User, request.user),
                    tighten_only=not at_least(membership, Role.ADMIN),
                    **form.cleaned_data,
                )
        except AccountError as exc:
            form.add_error(None, str(exc))
        else:
            form = ApiKeyCreateForm()
    keys = key_spend()(_keys(request, membership).select_related("created_by"))
    context = {
        "keys": keys,
        "budgets": rows_by(Budget.objects.filter(api_key__in=keys), "api_key_id"),
        "form": form,
        "new_secret": new_secret,
        "periods": BudgetPeriod.choices,
    }
    return render(request, "accounts/keys.html", context, status=400 if form.errors else 200)


@require_POST
@role_required(Role.MEMBER)
def key_limits(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    key = get_object_or_404(_keys(request, membership), pk=pk)
    form = ApiKeyLimitsForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Limits not changed: " + errors_sentence(form))
        return redirect("keys")
    try:
        tighten_only = not at_least(membership, Role.ADMIN)
        with audited_on(request, "update", key):
            api_key_update(key=key, tighten_only=tighten_only, **form.cleaned_data)
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Limits of {key.name or key.prefix} saved.")
    return redirect("keys")


@require_POST
@role_required(Role.MEMBER)
def key_revoke(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    key = get_object_or_404(_keys(request, membership), pk=pk)
    with audited_on(request, "revoke", key):
        key.revoke()
    if is_htmx(request):
        row = key_spend()(_keys(request, membership)).get(pk=pk)
        budgets = rows_by(Budget.objects.filter(api_key=row), "api_key_id")
        context = {"key": row, "budgets": budgets, "periods": BudgetPeriod.choices}
        return render(request, "accounts/_key_row.html", context)
    messages.success(
        request, f"{key.name or key.prefix} revoked: the gateway refuses it within seconds."
    )
    return redirect("keys")
