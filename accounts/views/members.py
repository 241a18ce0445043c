"""Members: list (with their budgets, and the organization's), invite (the link is mailed to
the person, never shown here), revoke a pending invitation, change role, remove. Admins manage
members and admins; owners also owners."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.forms import InviteForm, RoleForm
from accounts.invitations import invitation_revoke, invitation_send
from accounts.models import Budget, BudgetPeriod, BudgetScope, Invitation, Membership, Role
from accounts.permissions import at_least, can_manage_member, role_required
from accounts.services import AccountError, membership_remove, membership_set_role
from accounts.views.budgets import budget_rows, rows_by


@role_required(Role.ADMIN)
def member_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["role"] == Role.OWNER and membership.role != Role.OWNER:
            raise PermissionDenied("Only owners make owners.")
        try:
            with audited_on(request, "invite") as change:
                change.obj = sent = invitation_send(
                    organization=membership.organization,
                    invited_by=cast(User, request.user),
                    link_for=lambda token: _absolute(request, "invitation", token),
                    **form.cleaned_data,
                )
        except AccountError as exc:
            form.add_error("email", str(exc))
        else:
            messages.success(request, f"Invitation mailed to {sent.email}.")
            return redirect("members")
    org = membership.organization
    members = org.memberships.select_related("user").order_by("user__username")
    by_member = rows_by(Budget.objects.filter(organization=org, scope=BudgetScope.MEMBER),
                        "member_id")  # fmt: skip
    context = {
        "members": [(m, by_member.get(m.user_id, [])) for m in members],
        "invitations": org.invitations.pending().select_related("invited_by"),
        "form": form,
        "roles": Role.choices,
        "periods": BudgetPeriod.choices,
        "org_budgets": budget_rows(
            Budget.objects.filter(organization=org, scope=BudgetScope.ORGANIZATION)
        ),
    }
    return render(request, "accounts/members.html", context, status=400 if form.errors else 200)


def _absolute(request: HttpRequest, name: str, *args: str) -> str:
    return request.build_absolute_uri(reverse(name, args=args))


def _target(membership: Membership, pk: int) -> Membership:
    return get_object_or_404(Membership, organization=membership.organization, pk=pk)


@require_POST
@role_required(Role.ADMIN)
def member_role(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    target, form = _target(membership, pk), RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role.")
        return redirect("members")
    if not can_manage_member(membership, target, form.cleaned_data["role"]):
        raise PermissionDenied("Only owners change owners or make them.")
    try:
        with audited_on(request, "update", target):
            membership_set_role(membership=target, role=form.cleaned_data["role"])
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{target.user.username} is now {target.get_role_display().lower()}."
        )
    return redirect("members")


@require_POST
@role_required(Role.ADMIN)
def member_remove(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    target = _target(membership, pk)
    if not can_manage_member(membership, target):
        raise PermissionDenied("Only owners remove owners.")
    try:
        with audited_on(request, "delete", target):
            membership_remove(membership=target)
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{target.user.username} removed.")
    return redirect("members")


@require_POST
@role_required(Role.ADMIN)
def invitation_cancel(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    invitation = get_object_or_404(
        Invitation.objects.pending(), organization=membership.organization, pk=pk
    )
    if invitation.role == Role.OWNER and not at_least(membership, Role.OWNER):
        raise PermissionDenied("Only owners revoke invitations to become an owner.")
    with audited_on(request, "revoke", invitation):
        invitation_revoke(invitation=invitation)
    messages.success(request, f"The invitation of {invitation.email} is revoked.")
    return redirect("members")
