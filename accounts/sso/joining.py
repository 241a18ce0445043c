"""People join organizations by the verified domain of the address an identity provider
vouches for (its `email_verified` claim), with each domain's role."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from allauth.socialaccount.models import SocialLogin
from django.contrib.auth.models import AbstractBaseUser

from accounts.models import Membership
from accounts.sso.models import EmailDomain


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].strip().lower()


def vouched_addresses(sociallogin: SocialLogin) -> list[str]:
    """The addresses the identity provider says are verified."""
    return [address.email for address in sociallogin.email_addresses if address.verified]


def joinable_domains(addresses: Iterable[str]) -> list[EmailDomain]:
    domains = {domain_of(address) for address in addresses}
    return list(EmailDomain.objects.verified().filter(domain__in=domains))


def join_by_domain(user_id: int, addresses: Iterable[str]) -> None:
    """Make the user a member of each organization that verified one of these addresses'
    domains, with the domain's role; a membership they have already keeps its role."""
    for domain in joinable_domains(addresses):
        Membership.objects.get_or_create(
            user_id=user_id, organization_id=domain.organization_id, defaults={"role": domain.role}
        )


def join_on_sign_in(
    sender: Any, *, user: AbstractBaseUser, sociallogin: SocialLogin | None = None, **_: Any
) -> None:
    """allauth's user_logged_in: a sign-in through an identity provider joins by domain."""
    if sociallogin is not None:
        join_by_domain(int(user.pk), vouched_addresses(sociallogin))
