"""An organization's e-mail domains, verified by the organization itself in DNS or by an
operator, whose people join it by signing in through an identity provider; and whether it
requires single sign-on of its members."""

from __future__ import annotations

import secrets

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organization, Role

CHALLENGE_LABEL = "_momor-challenge"
CHALLENGE_PREFIX = "momor-domain-verification="


def new_challenge() -> str:
    return secrets.token_urlsafe(24)


class EmailDomainQuerySet(models.QuerySet["EmailDomain"]):
    def verified(self) -> EmailDomainQuerySet:
        return self.filter(verified_at__isnull=False)


class EmailDomain(models.Model):
    """A domain an organization's owner claims. Once an operator has verified that the
    organization holds it (the admin's Single sign-on > E-mail domains), whoever signs in
    through an identity provider with an address on it, which the provider says is verified,
    joins the organization with `role`. A domain is verified for one organization at most."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="email_domains"
    )
    domain = models.CharField(max_length=253, help_text="As in an address: example.com.")
    role = models.CharField(
        max_length=10,
        choices=Role.choices,
        default=Role.MEMBER,
        help_text="The role of whoever joins by signing in with an address on this domain.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    challenge = models.CharField(max_length=64, default=new_challenge)
    """What the organization publishes in DNS to verify the domain itself (accounts/sso/dns.py)."""

    objects = EmailDomainQuerySet.as_manager()

    class Meta:
        ordering = ["domain"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "domain"], name="one_claim_per_org"),
            models.UniqueConstraint(
                fields=["domain"],
                condition=Q(verified_at__isnull=False),
                name="verified_for_one_org",
            ),
        ]
        verbose_name = "e-mail domain"

    def __str__(self) -> str:
        return f"{self.domain} ({self.organization})"

    @property
    def challenge_name(self) -> str:
        """The DNS name whose TXT record verifies the claim."""
        return f"{CHALLENGE_LABEL}.{self.domain}"

    @property
    def challenge_value(self) -> str:
        return f"{CHALLENGE_PREFIX}{self.challenge}"

    def verify(self) -> None:
        if self.verified_at is None:
            self.verified_at = timezone.now()
            self.save(update_fields=["verified_at"])


class SignInPolicy(models.Model):
    """How an organization's members sign in: with `sso_required`, only through an identity
    provider; the password path refuses them."""

    organization = models.OneToOneField(
        Organization, on_delete=models.CASCADE, primary_key=True, related_name="sign_in_policy"
    )
    sso_required = models.BooleanField(
        default=False,
        help_text="Members sign in through an identity provider alone, never with a password.",
    )

    class Meta:
        verbose_name_plural = "sign-in policies"

    def __str__(self) -> str:
        return f"{self.organization}: {'SSO required' if self.sso_required else 'any sign-in'}"


def organization_requires_sso(organization_id: int) -> bool:
    return SignInPolicy.objects.filter(organization_id=organization_id, sso_required=True).exists()


def sso_required_for(user_id: int) -> bool:
    """Whether an organization the user belongs to requires single sign-on."""
    return SignInPolicy.objects.filter(
        sso_required=True, organization__memberships__user_id=user_id
    ).exists()


def signed_in_through_a_provider(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether the account is linked to an identity provider (it has signed in through one)."""
    return user.is_authenticated and SocialAccount.objects.filter(user_id=user.pk).exists()
