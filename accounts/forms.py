"""Forms of the members' UI: they parse and check input; the writes live in accounts.services."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any, cast

from django import forms

from accounts.field_bounds import INTEGER_MAX
from accounts.hooks import provider_places
from accounts.models import BudgetPeriod, Organization, Role
from core.durations import format_duration, parse_duration


class ApiKeyLimitsForm(forms.Form):
    credit_limit = forms.DecimalField(
        max_digits=18,
        decimal_places=9,
        min_value=Decimal(0),
        required=False,
        label="Credit limit (USD)",
        help_text="Empty: no limit of its own.",
    )
    rate_limit = forms.IntegerField(
        min_value=1,
        max_value=INTEGER_MAX,
        required=False,
        label="Rate limit (per minute)",
        help_text="Empty: default.",
    )


class ApiKeyCreateForm(ApiKeyLimitsForm):
    name = forms.CharField(max_length=100, required=False, help_text="What or who uses it.")
    field_order = ["name", "credit_limit", "rate_limit"]


class BudgetForm(forms.Form):
    """A budget set from the keys or members page: a key's (`key`), a member's (`member`, their
    user id), or the organization's; no amount lifts it."""

    key = forms.IntegerField(required=False, widget=forms.HiddenInput)
    member = forms.IntegerField(required=False, widget=forms.HiddenInput)
    period = forms.ChoiceField(choices=BudgetPeriod.choices)
    amount = forms.DecimalField(
        max_digits=18,
        decimal_places=9,
        min_value=Decimal(0),
        required=False,
        label="Budget (USD)",
        help_text="Empty: no budget for the period.",
    )


class SavedKeyForm(forms.Form):
    provider = forms.ChoiceField(help_text="A provider, or one of its regions (name@region).")
    secret = forms.CharField(
        label="Key",
        max_length=4000,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; only its last four characters are shown again.",
    )
    label = forms.CharField(max_length=100, required=False)
    zdr = forms.BooleanField(
        required=False,
        label="Zero data retention",
        help_text="Your agreement with this provider covers zero data retention.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        places = provider_places().all()
        provider = cast(forms.ChoiceField, self.fields["provider"])  # as declared above
        provider.choices = [(place, place) for place in places]


class PolicyForm(forms.Form):
    zdr_hold = forms.BooleanField(required=False, label="Hold every call to zero data retention")
    allow_deprecated = forms.BooleanField(
        required=False, label="Let deprecated models serve tier, auto and * selectors"
    )
    max_model_age = forms.CharField(
        required=False,
        max_length=40,
        label="Maximum model age",
        help_text="ISO 8601 (P6M, P1Y, P90D) or a TimeSpan (180.00:00:00); empty: no limit.",
    )

    @classmethod
    def of(cls, organization: Organization) -> PolicyForm:
        age = organization.max_model_age
        return cls(
            initial={
                "zdr_hold": organization.zdr_hold,
                "allow_deprecated": organization.allow_deprecated,
                "max_model_age": format_duration(age) if age else "",
            }
        )

    def clean_max_model_age(self) -> timedelta | None:
        text = self.cleaned_data["max_model_age"].strip()
        if not text:
            return None
        try:
            return parse_duration(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class InviteForm(forms.Form):
    # The address becomes a new account's username: 150 characters at most.
    email = forms.EmailField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class OrganizationForm(forms.ModelForm[Organization]):
    class Meta:
        model = Organization
        fields = ["name"]


class SwitchForm(forms.Form):
    organization = forms.IntegerField()
