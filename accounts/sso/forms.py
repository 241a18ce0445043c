"""The owner's forms on the Single sign-on page: a domain claimed, and the sign-in policy."""

from __future__ import annotations

import re
from typing import Any

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.models import SocialAccount
from django import forms
from django.http import HttpRequest

from accounts.models import Organization
from accounts.sso.models import EmailDomain, SignInPolicy

LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
DOMAIN = re.compile(rf"{LABEL}(\.{LABEL})+")


class DomainForm(forms.ModelForm[EmailDomain]):
    class Meta:
        model = EmailDomain
        fields = ["domain", "role"]

    def __init__(self, *args: Any, organization: Organization, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.organization = organization

    def clean_domain(self) -> str:
        """The domain as addresses write it, lowercase (an internationalized one in its
        ASCII form), once per organization, and verified for no other."""
        domain = ascii_domain(self.cleaned_data["domain"])
        claims = EmailDomain.objects.filter(domain=domain)
        if claims.filter(organization=self.instance.organization).exists():
            raise forms.ValidationError(f"{domain} is claimed already.")
        if claims.verified().exists():
            raise forms.ValidationError(f"{domain} is verified for another organization.")
        return domain


def ascii_domain(text: str) -> str:
    try:
        domain = text.strip().rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        domain = ""
    if not DOMAIN.fullmatch(domain):
        raise forms.ValidationError("Enter a domain as addresses write it: example.com.")
    return domain


class SignInPolicyForm(forms.ModelForm[SignInPolicy]):
    """Single sign-on is required only from a session whose owner can sign in through an
    identity provider, so that turning it on never locks them out."""

    class Meta:
        model = SignInPolicy
        fields = ["sso_required"]
        labels = {"sso_required": "Require single sign-on"}

    def __init__(self, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request = request

    def clean_sso_required(self) -> bool:
        required: bool = self.cleaned_data["sso_required"]
        if required and not get_adapter().list_apps(self.request):
            raise forms.ValidationError("No identity provider is configured on this Momor.")
        if required and not SocialAccount.objects.filter(user_id=self.request.user.pk).exists():
            raise forms.ValidationError(
                "Sign in through your identity provider once before requiring it."
            )
        return required
