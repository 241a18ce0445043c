"""The Alerts page's forms: a rule, and a webhook endpoint."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from accounts.models import Organization
from alerts.endpoints import rule_problem, url_problem
from alerts.models import AlertRule


class RuleForm(forms.ModelForm[AlertRule]):
    threshold = forms.DecimalField(
        min_value=Decimal(0),
        max_digits=18,
        decimal_places=6,
        help_text="A percentage for a budget's share or an error rate, USD for a balance, a "
        "count for dead letters.",
    )

    class Meta:
        model = AlertRule
        fields = ["kind", "threshold", "email"]
        labels = {"email": "Mail the owners and admins too"}
        help_texts = {"email": ""}

    def __init__(self, *args: Any, organization: Organization, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.organization = organization

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, threshold = data.get("kind"), data.get("threshold")
        if kind and threshold is not None:
            problem = rule_problem(self.instance.organization, kind, threshold)
            if problem:
                self.add_error("threshold", problem)
        return data


class WebhookForm(forms.Form):
    url = forms.URLField(
        max_length=2000, assume_scheme="https", label="URL",
        help_text="Where each alert is posted as JSON, signed with the endpoint's secret.",
    )  # fmt: skip
    description = forms.CharField(max_length=200, required=False)

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        problem = url_problem(url)
        if problem:
            raise forms.ValidationError(problem)
        return url
