"""The owner's Single sign-on page: the organization's e-mail domains (claimed here, verified by
the TXT record the page names or by an operator in the admin) with the role each gives, and
whether single sign-on is required."""

from __future__ import annotations

from django.contrib import messages
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.models import Membership, Role
from accounts.permissions import role_required
from accounts.sso.dns import txt_records
from accounts.sso.forms import DomainForm, SignInPolicyForm
from accounts.sso.models import EmailDomain, SignInPolicy


@role_required(Role.OWNER)
def single_sign_on(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.organization
    domain_form = DomainForm(request.POST or None, organization=org)
    if request.method == "POST" and domain_form.is_valid():
        with audited_on(request, "claim") as change:
            change.obj = claimed = domain_form.save()
        messages.success(request, f"{claimed.domain} claimed: an operator verifies it.")
        return redirect("single-sign-on")
    policy_form = SignInPolicyForm(instance=_policy(membership), request=request)
    return _page(request, membership, domain_form, policy_form)


@require_POST
@role_required(Role.OWNER)
def sign_in_policy(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = SignInPolicyForm(request.POST, instance=_policy(membership), request=request)
    if not form.is_valid():
        return _page(request, membership, DomainForm(organization=membership.organization), form)
    with audited_on(request, "update", form.instance if form.instance.pk else None) as change:
        change.obj = form.save()
    messages.success(request, "Sign-in policy saved.")
    return redirect("single-sign-on")


@require_POST
@role_required(Role.OWNER)
def domain_remove(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    domain = get_object_or_404(EmailDomain, organization=membership.organization, pk=pk)
    with audited_on(request, "delete", domain):
        domain.delete()
    messages.success(request, f"{domain.domain} removed: nobody joins by it any more.")
    return redirect("single-sign-on")


@require_POST
@role_required(Role.OWNER)
def domain_check(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Verify a claimed domain by the TXT record its page names, when DNS has it."""
    domain = get_object_or_404(EmailDomain, organization=membership.organization, pk=pk)
    if domain.verified_at is not None:
        messages.success(request, f"{domain.domain} is verified already.")
        return redirect("single-sign-on")
    if domain.challenge_value not in txt_records(domain.challenge_name):
        messages.error(
            request,
            f"No TXT record {domain.challenge_value} at {domain.challenge_name} yet: "
            "DNS may take a while to publish it.",
        )
        return redirect("single-sign-on")
    try:
        with transaction.atomic(), audited_on(request, "verify", domain):
            domain.verify()
    except IntegrityError:
        messages.error(request, f"{domain.domain} is verified for another organization.")
    else:
        messages.success(request, f"{domain.domain} verified: people signing in from it join.")
    return redirect("single-sign-on")


def _policy(membership: Membership) -> SignInPolicy:
    found = SignInPolicy.objects.filter(organization=membership.organization).first()
    return found or SignInPolicy(organization=membership.organization)


def _page(
    request: HttpRequest,
    membership: Membership,
    domain_form: DomainForm,
    policy_form: SignInPolicyForm,
) -> HttpResponse:
    context = {
        "domains": membership.organization.email_domains.all(),
        "domain_form": domain_form,
        "policy_form": policy_form,
    }
    failed = domain_form.errors or policy_form.errors
    return render(request, "sso/single_sign_on.html", context, status=400 if failed else 200)
