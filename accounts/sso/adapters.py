"""How django-allauth behaves in Momor. Identity providers come from the environment alone
(momor/identity_providers.py: no client secret in the database). Nobody signs up with a
password through allauth (Momor's own sign-in and invitations make password accounts);
someone new signs up through an identity provider only with an address it vouches for that is
on a domain an organization has verified or that a pending invitation was sent to, and an
existing account is the one signed in when its address is such an address (never an
operator's staff account)."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter, _build_apps_from_settings
from allauth.socialaccount.models import SocialApp, SocialLogin
from django.http import HttpRequest

from accounts.models import Invitation
from accounts.sso.joining import joinable_domains, vouched_addresses


class AccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped: its class is Any
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False


class SocialAccountAdapter(DefaultSocialAccountAdapter):  # type: ignore[misc]  # allauth is untyped: its class is Any
    def list_apps(
        self, request: HttpRequest | None, provider: str | None = None, client_id: str | None = None
    ) -> list[SocialApp]:
        """The apps of SOCIALACCOUNT_PROVIDERS alone (unsaved rows), the database not read."""
        found = _build_apps_from_settings(provider=provider, client_id=client_id)
        return [app for apps in found.values() for app in apps]

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return _admitted(vouched_addresses(sociallogin))

    def can_authenticate_by_email(self, login: SocialLogin, email: str) -> bool:
        return _admitted([email])

    def authenticate_by_email(self, sociallogin: SocialLogin) -> Any:
        found = super().authenticate_by_email(sociallogin)
        if found is not None and (found[0].is_staff or found[0].is_superuser):
            return None
        return found


def _admitted(addresses: list[str]) -> bool:
    """Whether an organization admits one of these addresses: by its verified domain, or by a
    pending invitation to it."""
    invited = Invitation.objects.pending().filter(email__in=[a.lower() for a in addresses])
    return bool(joinable_domains(addresses)) or invited.exists()
