"""The operators' admin for the provider catalog: providers and regions, models, offerings.

Momor's own provider key is write-only here: a form field sets or clears it, and neither
the key nor its ciphertext is ever rendered."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar, TypeVar

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import ForeignKey
from django.http import HttpRequest
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views.decorators.debug import sensitive_post_parameters
from django_stubs_ext import StrOrPromise

from accounts.key_env import key_env_problem
from accounts.secrets import readable
from core.formatting import clipped
from gateway.catalog.loader import OFFERING_CAPABILITIES
from gateway.catalog.rules import (
    MODEL_RULES,
    OFFERING_PRICES,
    OFFERING_RULES,
    PLACE_RULES,
    Rule,
    RuleError,
)
from gateway.models import Model as CatalogModel
from gateway.models import ModelKind, Offering, Provider, Region
from gateway.routing.performance import figures_of


def _https_formfield(field: models.Field[Any, Any], **kwargs: Any) -> forms.Field | None:
    # Provider endpoints are HTTPS unless the operator writes otherwise (e.g. a loopback fake).
    if isinstance(field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return field.formfield(**kwargs)


M = TypeVar("M", bound=models.Model)


class RuledForm(forms.ModelForm[M]):
    """A catalog row's form whose fields are held to the catalog file's rules
    (gateway/catalog/rules.py): each is stored as its rule makes it, or refused with its
    message."""

    rules: ClassVar[dict[str, Rule]] = {}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, rule in self.rules.items():
            if name in cleaned:  # a field on the form that passed Django's own checks
                try:
                    cleaned[name] = rule(name, cleaned[name])
                except RuleError as exc:
                    self.add_error(name, str(exc))
        return cleaned


PROVIDER_FIELDS = [
    "name", "display_name", "api", "base_url", "key_env", "zdr", "collects_data", "locations",
]  # fmt: skip


class ProviderForm(RuledForm[Provider]):
    new_key = forms.CharField(
        label="New key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Momor's own key for this provider, stored encrypted. "
        "Leave empty to keep the current one.",
    )
    clear_key = forms.BooleanField(
        label="Clear stored key",
        required=False,
        help_text="Remove the stored key; calls then use the key_env variable.",
    )

    class Meta:
        model = Provider
        fields = PROVIDER_FIELDS
        formfield_callback = _https_formfield

    rules = PLACE_RULES

    def clean_key_env(self) -> str:
        name: str = self.cleaned_data["key_env"].strip()
        if name and (problem := key_env_problem(name)):
            raise forms.ValidationError(problem)
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("new_key") and cleaned.get("clear_key"):
            raise forms.ValidationError("Either set a new key or clear the stored one, not both.")
        return cleaned

    def save(self, commit: bool = True) -> Provider:
        provider: Provider = super().save(commit=False)
        if self.cleaned_data.get("clear_key"):
            provider.set_key("")
        elif self.cleaned_data.get("new_key"):
            provider.set_key(self.cleaned_data["new_key"])
        if commit:
            provider.save()
        return provider


def price(value: Decimal | None) -> str:
    """A price per million tokens without the stored field's trailing zeros: 1.25, not
    1.250000000."""
    if value is None:
        return "-"
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


URL_OVERRIDES: dict[type[models.Field[Any, Any]], dict[str, Any]] = {
    models.URLField: {"assume_scheme": "https"}
}


class RegionForm(RuledForm[Region]):
    rules = PLACE_RULES


class RegionInline(admin.TabularInline[Region, Provider]):
    model = Region
    form = RegionForm
    formfield_overrides = URL_OVERRIDES
    fields = ["name", "base_url", "collects_data", "locations"]
    extra = 0


@admin.register(Provider)
@method_decorator(sensitive_post_parameters("new_key"), name="changeform_view")
class ProviderAdmin(admin.ModelAdmin[Provider]):
    form = ProviderForm
    formfield_overrides = URL_OVERRIDES
    inlines = [RegionInline]
    fields = [*PROVIDER_FIELDS, "new_key", "clear_key"]
    list_display = ["name", "api", "endpoint", "key_env", "has_stored_key", "key_state", "zdr"]
    list_editable = ["zdr"]
    list_filter = ["api", "zdr"]
    search_fields = ["name", "display_name"]

    @admin.display(description="Base URL", ordering="base_url")
    def endpoint(self, provider: Provider) -> str:
        return clipped(provider.base_url)

    @admin.display(boolean=True, description="Momor key stored")
    def has_stored_key(self, provider: Provider) -> bool:
        return bool(provider.key_encrypted)

    @admin.display(description="Stored key")
    def key_state(self, provider: Provider) -> str:
        """Whether the stored key is used: one the current key cannot decrypt is skipped."""
        if not provider.key_encrypted:
            return "-"
        if readable(provider.key_encrypted):
            return "in use"
        return format_html(
            '<span title="{}">skipped: cannot be decrypted</span>',
            "MOMOR_ENCRYPTION_KEY changed since it was stored: set it again",
        )


class CatalogModelForm(RuledForm[CatalogModel]):
    rules = MODEL_RULES


@admin.register(CatalogModel)
class CatalogModelAdmin(admin.ModelAdmin[CatalogModel]):
    form = CatalogModelForm
    list_display = [
        "id", "name", "kind", "released", "deprecated", "tiers", "auto", "context_length",
        "max_output_tokens",
    ]  # fmt: skip
    list_filter = ["kind", "deprecated", "auto"]
    search_fields = ["id"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: CatalogModel | None = None
    ) -> list[str] | tuple[str, ...]:
        # The id is the primary key: a changed one would save a second model beside the first.
        return ("id",) if obj is not None else ()


class OfferingForm(RuledForm[Offering]):
    class Meta:
        model = Offering
        fields = [
            "model",
            "provider",
            "region",
            "upstream_id",
            *OFFERING_PRICES,
            *OFFERING_CAPABILITIES,
            "enabled",
        ]

    rules = OFFERING_RULES

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        provider, region = cleaned.get("provider"), cleaned.get("region")
        if provider and region and region.provider_id != provider.pk:
            self.add_error("region", f"{region} is not a region of {provider}.")
        model = cleaned.get("model")
        if model is not None and model.kind == ModelKind.EMBEDDING:
            for key in ("completion_price", "cache_read_price", "cache_write_price"):
                if cleaned.get(key):
                    self.add_error(key, f"{model} is an embedding model, priced by prompt alone.")
        return cleaned


class RegionListFilter(admin.RelatedFieldListFilter):
    """Regions with their providers in one query: a region's label names its provider."""

    def field_choices(
        self, field: Any, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, StrOrPromise]]:
        return [
            (str(region.pk), str(region)) for region in Region.objects.select_related("provider")
        ]


@admin.register(Offering)
class OfferingAdmin(admin.ModelAdmin[Offering]):
    form = OfferingForm
    list_display = [
        "model",
        "place",
        "upstream",
        "prompt",
        "completion",
        "cache",
        "tools",
        "json_schema",
        "enabled",
    ]
    list_filter = [
        "provider",
        "model",
        "tools",
        "json_schema",
        ("region", RegionListFilter),
        "enabled",
    ]
    search_fields = ["model__id", "upstream_id"]
    list_select_related = ["model", "provider", "region__provider"]
    autocomplete_fields = ["model"]
    readonly_fields = ["measured"]

    @admin.display(description="Measured (last 15 minutes)")
    def measured(self, obj: Offering) -> str:
        if obj.pk is None:
            return "—"
        found = async_to_sync(figures_of)([obj.pk]).get(obj.pk)
        if found is None:
            return "No call measured."
        figures = found.as_dict()
        return (
            f"{figures['calls']} tries, {figures['quality']:.1%} served; "
            f"first token {_or_dash(figures['latency_ms'], 'ms')}, "
            f"{_or_dash(figures['throughput'], 'tokens/s')}"
        )

    @admin.display(description="Provider", ordering="provider__name")
    def place(self, offering: Offering) -> str:
        """The provider, or its region as name@region."""
        return offering.place

    @admin.display(description="Upstream ID", ordering="upstream_id")
    def upstream(self, offering: Offering) -> str:
        return clipped(offering.upstream_id)

    @admin.display(description="Prompt $/M", ordering="prompt_price")
    def prompt(self, offering: Offering) -> str:
        return price(offering.prompt_price)

    @admin.display(description="Completion $/M", ordering="completion_price")
    def completion(self, offering: Offering) -> str:
        return price(offering.completion_price)

    @admin.display(description="Cache read / write $/M")
    def cache(self, offering: Offering) -> str:
        return f"{price(offering.cache_read_price)} / {price(offering.cache_write_price)}"

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        # A region's label names its provider: fetch them together, not one query per option.
        if db_field.name == "region":
            kwargs["queryset"] = Region.objects.select_related("provider")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


def _or_dash(value: object, unit: str) -> str:
    return "—" if value is None else f"{value} {unit}"
