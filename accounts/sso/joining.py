"""People join organizations by the verified domain of the address an identity provider
vouches for (its `email_verified` claim), with each domain's role."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from allauth.socialaccount.models import SocialLogin
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest

from accounts.models import Membership
from accounts.sso.models import EmailDomain
from audit.actors import Actor
from audit.trail import record_change
from audit.values import values_of


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].strip().lower()


def vouched_addresses(sociallogin: SocialLogin) -> list[str]:
    """The addresses the identity provider says are verified."""
    return [address.email for address in sociallogin.email_addresses if address.verified]


def joinable_domains(addresses: Iterable[str]) -> list[EmailDomain]:
    domains = {domain_of(address) for address in addresses}
    return list(EmailDomain.objects.verified().filter(domain__in=domains))


def join_by_domain(
    user: AbstractBaseUser, addresses: Iterable[str], request: HttpRequest | None = None
) -> None:
    """Make the user a member of each organization that verified one of these addresses'
    domains, with the domain's role; a membership they have already keeps its role. Each
    membership made is audited as the user's joining."""
    for domain in joinable_domains(addresses):
        joined, made = Membership.objects.get_or_create(
            user_id=user.pk, organization_id=domain.organization_id, defaults={"role": domain.role}
        )
        if made:
            record_change(Actor.member(user), "join", joined, {}, values_of(joined), request)


def audit_sign_up(
    sender: Any, *, user: AbstractBaseUser, request: HttpRequest | None = None, **_: Any
) -> None:
    """allauth's user_signed_up: the account a first sign-in through an identity provider
    makes is audited as the person's own."""
    record_change(Actor.member(user), "sign_up", user, {}, values_of(user), request)


def join_on_sign_in(
    sender: Any,
    *,
    user: AbstractBaseUser,
    sociallogin: SocialLogin | None = None,
    request: HttpRequest | None = None,
    **_: Any,
) -> None:
    """allauth's user_logged_in: a sign-in through an identity provider joins by domain."""
    if sociallogin is not None:
        join_by_domain(user, vouched_addresses(sociallogin), request)
