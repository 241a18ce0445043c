"""Members: list, invite (a new person gets a link to set their password), change role,
remove. Admins manage members and admins; owners also owners."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.views.decorators.http import require_POST

from accounts.forms import InviteForm, RoleForm
from accounts.models import Membership, Role
from accounts.permissions import can_manage_member, role_required
from accounts.services import (
    AccountError,
    membership_invite,
    membership_remove,
    membership_set_role,
)


def _set_password_link(request: HttpRequest, membership: Membership) -> str:
    user = membership.user
    path = reverse(
        "password_reset_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )
    return request.build_absolute_uri(path)


@role_required(Role.ADMIN)
def member_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = InviteForm(request.POST or None)
    link = None
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["role"] == Role.OWNER and membership.role != Role.OWNER:
            raise PermissionDenied("Only owners make owners.")
        try:
            invited, new = membership_invite(
                organization=membership.organization, **form.cleaned_data
            )
        except AccountError as exc:
            form.add_error("email", str(exc))
        else:
            link = _set_password_link(request, invited) if new else None
            messages.success(request, f"{invited.user.email} is now a member.")
            form = InviteForm()
    members = membership.organization.memberships.select_related("user").order_by("user__username")
    context = {"members": members, "form": form, "invite_link": link, "roles": Role.choices}
    return render(request, "ui/members.html", context, status=400 if form.errors else 200)


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
        membership_remove(membership=target)
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{target.user.username} removed.")
    return redirect("members")
