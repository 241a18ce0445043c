"""Forms of the members' UI: they parse and check input; the writes live in accounts.services."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.utils import timezone

from accounts.durations import format_duration, parse_duration
from accounts.models import Organization, Role
from billing.models import GenerationStatus


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
        min_value=1, required=False, label="Rate limit (per minute)", help_text="Empty: default."
    )


class ApiKeyCreateForm(ApiKeyLimitsForm):
    name = forms.CharField(max_length=100, required=False, help_text="What or who uses it.")
    field_order = ["name", "credit_limit", "rate_limit"]


def provider_places() -> list[tuple[str, str]]:
    """Every provider root and name@region of the catalog."""
    from gateway.models import Provider  # the catalog, read only

    places: list[tuple[str, str]] = []
    for provider in Provider.objects.prefetch_related("regions").order_by("name"):
        places.append((provider.name, provider.name))
        places += [
            (f"{provider.name}@{r.name}", f"{provider.name}@{r.name}")
            for r in provider.regions.all()
        ]
    return places


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
        self.fields["provider"].choices = provider_places()  # type: ignore[attr-defined]


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
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class OrganizationForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Organization
        fields = ["name"]


class SwitchForm(forms.Form):
    organization = forms.IntegerField()


class DateInput(forms.DateInput):
    input_type = "date"


class GenerationFilterForm(forms.Form):
    model = forms.ChoiceField(required=False)
    provider = forms.ChoiceField(required=False)
    status = forms.ChoiceField(
        required=False, choices=[("", "Any status"), *GenerationStatus.choices]
    )
    since = forms.DateField(required=False, widget=DateInput, label="From")
    until = forms.DateField(required=False, widget=DateInput, label="To")

    def __init__(self, *args: Any, models: list[str], providers: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [("", "Any model"), *((m, m) for m in models)]  # type: ignore[attr-defined]
        self.fields["provider"].choices = [("", "Any provider"), *((p, p) for p in providers)]  # type: ignore[attr-defined]


PERIODS = [(7, "Last 7 days"), (30, "Last 30 days"), (90, "Last 90 days")]


class UsageForm(forms.Form):
    days = forms.TypedChoiceField(choices=PERIODS, coerce=int, required=False, label="Period")
    split = forms.ChoiceField(
        choices=[("model", "By model"), ("provider", "By provider")], required=False
    )

    def period(self) -> tuple[date, date]:
        days = (self.cleaned_data.get("days") if self.is_valid() else None) or 30
        until = timezone.localdate()
        return until - timedelta(days=days - 1), until

    def split_by(self) -> str:
        return (self.cleaned_data.get("split") if self.is_valid() else None) or "model"
