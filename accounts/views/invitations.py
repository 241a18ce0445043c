"""Following an invitation's link: a new person sets their password and is signed in; someone
with an account signs in as it, then accepts. Anyone else is turned away."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from accounts.acting import audited_on
from accounts.invitations import (
    InvitationInvalid,
    account_exists,
    invitation_accept,
    invitation_accept_new,
    invitation_by_token,
)
from accounts.models import Invitation
from accounts.permissions import SESSION_ORG
from accounts.services import AccountError
from accounts.sso.models import organization_requires_sso, signed_in_through_a_provider
from audit.actors import Actor

PAGE = "registration/invitation.html"
SESSION_INVITATION = "momor_invitation"
"""The token of the invitation opened in this session: the link's URL holds it only until the
first GET, so later pages, their Referer and their log lines never show it."""


@never_cache
@sensitive_post_parameters("new_password1", "new_password2")
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """The mailed link: a GET puts its token in the session and goes on to a URL without it;
    a POST to it (a page opened before this) is answered as the accept page would."""
    try:
        found = invitation_by_token(token)
    except InvitationInvalid as exc:
        return _gone(request, str(exc))
    request.session[SESSION_INVITATION] = token
    if request.method == "POST":
        return _follow(request, found)
    # The pages keep Django's same-origin policy: with none, a browser posts their forms with
    # `Origin: null`, which the CSRF check refuses.
    response = redirect("invitation-accept")
    response["Referrer-Policy"] = "no-referrer"
    return response


@never_cache
@sensitive_post_parameters("new_password1", "new_password2")
def invitation_opened(request: HttpRequest) -> HttpResponse:
    """The invitation opened in this session."""
    token = request.session.get(SESSION_INVITATION)
    if not isinstance(token, str):
        return _gone(request, "Open the link in the invitation's mail to accept it.")
    try:
        found = invitation_by_token(token)
    except InvitationInvalid as exc:
        del request.session[SESSION_INVITATION]
        return _gone(request, str(exc))
    return _follow(request, found)


def _follow(request: HttpRequest, found: Invitation) -> HttpResponse:
    if organization_requires_sso(found.organization_id) and not signed_in_through_a_provider(
        request.user
    ):
        refused = (
            f"{found.organization.name} requires single sign-on: sign in through your identity "
            f"provider as {found.email}, then open the invitation's link again."
        )
        return render(request, PAGE, {"invitation": found, "refused": refused}, status=403)
    if account_exists(found.email):
        return _for_an_account(request, found)
    if request.user.is_authenticated:
        refused = "This invitation is for someone new: sign out to accept it."
        return render(request, PAGE, {"refused": refused}, status=403)
    return _for_someone_new(request, found)


def _gone(request: HttpRequest, refused: str) -> HttpResponse:
    return render(request, PAGE, {"refused": refused}, status=410)


def _for_an_account(request: HttpRequest, found: Invitation) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("invitation-accept"))
    if request.user.email.strip().lower() != found.email:
        refused = "This invitation was sent to another address: sign in as that account."
        return render(request, PAGE, {"refused": refused}, status=403)
    if request.method != "POST":
        return render(request, PAGE, {"invitation": found})
    try:
        with audited_on(request, "accept", found):
            joined = invitation_accept(invitation=found, user=request.user)
    except AccountError as exc:
        return render(request, PAGE, {"invitation": found, "refused": str(exc)}, status=403)
    return _welcome(request, joined.organization_id, found)


def _for_someone_new(request: HttpRequest, found: Invitation) -> HttpResponse:
    newcomer = get_user_model()(username=found.email, email=found.email)
    form = SetPasswordForm(newcomer, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with audited_on(request, "accept", found) as change:
                user = invitation_accept_new(
                    invitation=found, password=form.cleaned_data["new_password1"]
                )
                change.actor = Actor.member(user)
        except AccountError as exc:
            form.add_error(None, str(exc))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return _welcome(request, found.organization_id, found)
    status = 400 if form.errors else 200
    return render(request, PAGE, {"invitation": found, "form": form}, status=status)


def _welcome(request: HttpRequest, organization_id: int, found: Invitation) -> HttpResponse:
    request.session.pop(SESSION_INVITATION, None)
    request.session[SESSION_ORG] = organization_id
    messages.success(request, f"Welcome to {found.organization.name}.")
    return redirect("overview")
