"""Forms of billing's pages: the generations filter and the usage period. They parse input
only; the reads live in billing.models (GenerationQuerySet) and billing.usage.reads."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any, cast

from django import forms
from django.utils import timezone

from accounts.field_bounds import day_in_range, day_range_text
from billing.models import GenerationApi, GenerationStatus
from billing.usage.reads import Split


class DateInput(forms.DateInput):
    input_type = "date"


class GenerationFilterForm(forms.Form):
    model = forms.ChoiceField(required=False)
    provider = forms.ChoiceField(required=False)
    status = forms.ChoiceField(
        required=False, choices=[("", "Any status"), *GenerationStatus.choices]
    )
    api = forms.ChoiceField(
        required=False, choices=[("", "Any API"), *GenerationApi.choices], label="API"
    )
    session = forms.CharField(
        required=False,
        max_length=256,
        widget=forms.TextInput(attrs={"placeholder": "Session id"}),
    )
    app = forms.CharField(
        required=False, max_length=2048, widget=forms.TextInput(attrs={"placeholder": "App"})
    )
    since = forms.DateField(required=False, widget=DateInput, label="From")
    until = forms.DateField(required=False, widget=DateInput, label="To")

    def __init__(self, *args: Any, models: list[str], providers: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _menu(self, "model").choices = [("", "Any model"), *((m, m) for m in models)]
        _menu(self, "provider").choices = [("", "Any provider"), *((p, p) for p in providers)]

    def clean_since(self) -> date | None:
        return _day_in_range(self.cleaned_data["since"])

    def clean_until(self) -> date | None:
        return _day_in_range(self.cleaned_data["until"])


def _menu(form: forms.Form, name: str) -> forms.ChoiceField:
    """The form's field `name`, declared a ChoiceField (the form's `fields` are typed as any
    field)."""
    return cast(forms.ChoiceField, form.fields[name])


def _day_in_range(day: date | None) -> date | None:
    if day is not None and not day_in_range(day):
        raise forms.ValidationError(f"A day {day_range_text()}.")
    return day


PERIODS = [(7, "Last 7 days"), (30, "Last 30 days"), (90, "Last 90 days")]
DEFAULT_DAYS = 30


class UsageForm(forms.Form):
    """The period and split of the usage page; what the query leaves out is the default, so
    the menus always show what the page covers."""

    days = forms.TypedChoiceField(choices=PERIODS, coerce=int, required=False, label="Period")
    split = forms.ChoiceField(
        choices=[
            ("model", "By model"),
            ("provider", "By provider"),
            ("app", "By app"),
            ("api", "By API"),
        ],
        required=False,
    )

    def __init__(self, query: Mapping[str, Any] | None = None) -> None:
        super().__init__({"days": str(DEFAULT_DAYS), "split": "model"})
        data = dict(self.data)
        for name, value in (query or {}).items():
            if name in data and self._offers(name, value):
                data[name] = value
        self.data = data

    def _offers(self, name: str, value: object) -> bool:
        return _menu(self, name).valid_value(value)

    def period(self) -> tuple[date, date]:
        days = (self.cleaned_data.get("days") if self.is_valid() else None) or DEFAULT_DAYS
        until = timezone.localdate()
        return until - timedelta(days=days - 1), until

    def split_by(self) -> Split:
        """The split asked for, one of the menu's (the form holds it to them)."""
        return cast(Split, (self.cleaned_data.get("split") if self.is_valid() else None) or "model")

    def split_name(self) -> str:
        """The split as the page writes it: `model`, `provider`, `app` or `API`."""
        split = self.split_by()
        return "API" if split == "api" else split
