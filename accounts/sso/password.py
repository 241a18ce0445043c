"""The password path for people whose organization requires single sign-on: refused whatever
the password, before it is checked (so the refusal is no oracle for a password), with a pointer
to the identity provider; the sign-in throttle counts it as a failure like any other."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from accounts.sso.models import sso_required_for

SSO_REQUIRED = (
    "Your organization requires single sign-on: sign in with your identity provider, "
    "not with a password."
)


class PasswordSignInForm(AuthenticationForm):
    def clean(self) -> dict[str, Any]:
        if _requires_sso(self.cleaned_data.get("username") or ""):
            raise ValidationError(SSO_REQUIRED, code="sso_required")
        return super().clean()

    @property
    def sso_refused(self) -> bool:
        return self.has_error(NON_FIELD_ERRORS, "sso_required")


def _requires_sso(username: str) -> bool:
    user_model = get_user_model()
    user = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: username}).first()
    return user is not None and sso_required_for(int(user.pk))
