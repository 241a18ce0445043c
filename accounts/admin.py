"""The operators' admin for organizations, their API keys and their saved provider keys.

Secrets are write-only here: an API key shows its prefix alone (never its hash), and a saved
key's secret is set through a password field and never rendered, nor its ciphertext."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from accounts.cloud_projects import project_id_problem
from accounts.hooks import provider_places
from accounts.models import ApiKey, Budget, Membership, Organization, SavedKey


class MembershipInline(admin.TabularInline[Membership, Organization]):
    model = Membership
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["user"]
    extra = 0


class OrganizationForm(forms.ModelForm[Organization]):
    class Meta:
        model = Organization
        fields = ["slug", "name", "zdr_hold", "allow_deprecated", "max_model_age"]

    def clean_max_model_age(self) -> timedelta | None:
        """As set_policy and the members' UI hold it: empty for no limit, else above zero."""
        age: timedelta | None = self.cleaned_data["max_model_age"]
        if age is not None and age <= timedelta(0):
            raise forms.ValidationError("The maximum model age must be longer than zero.")
        return age


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin[Organization]):
    form = OrganizationForm
    inlines = [MembershipInline]
    fields = ["slug", "name", "balance", "zdr_hold", "allow_deprecated", "max_model_age"]
    readonly_fields = ["balance"]
    list_display = ["slug", "name", "balance", "zdr_hold", "allow_deprecated", "max_model_age"]
    list_filter = ["zdr_hold", "allow_deprecated"]
    search_fields = ["slug", "name"]


class ApiKeyForm(forms.ModelForm[ApiKey]):
    """A key's limits as the members' UI and the management API take them."""

    class Meta:
        model = ApiKey
        fields = ["name", "expires_at", "credit_limit", "rate_limit"]

    def clean_credit_limit(self) -> Decimal | None:
        limit: Decimal | None = self.cleaned_data["credit_limit"]
        if limit is not None and limit < 0:
            raise forms.ValidationError("The credit limit must not be negative.")
        return limit

    def clean_rate_limit(self) -> int | None:
        limit: int | None = self.cleaned_data["rate_limit"]
        if limit is not None and limit < 1:
            raise forms.ValidationError("The rate limit must be at least 1 a minute.")
        return limit


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    """No add form: a key's secret is shown once, by `create_api_key` or the members' UI."""

    form = ApiKeyForm

    fields = [
        "prefix",
        "name",
        "organization",
        "created_by",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "credit_limit",
        "rate_limit",
    ]
    readonly_fields = [
        "prefix",
        "organization",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_display = [
        "prefix",
        "name",
        "organization",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked",
        "credit_limit",
        "rate_limit",
    ]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "organization"]
    search_fields = ["prefix", "name", "organization__slug"]
    list_select_related = ["organization"]
    actions = ["revoke_keys"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(boolean=True, description="Revoked", ordering="revoked_at")
    def revoked(self, key: ApiKey) -> bool:
        return key.revoked_at is not None

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            key.revoke()
        self.message_user(request, f"Revoked {len(keys)} key(s).", messages.SUCCESS)


def _known_place(place: str) -> bool:
    """Whether `place` names a catalog provider root, or one of its regions as name@region."""
    root, _, region = place.partition("@")
    if not region:
        return provider_places().has_provider(root)
    return provider_places().has_region(root, region)


class SavedKeyForm(forms.ModelForm[SavedKey]):
    secret = forms.CharField(
        label="Secret",
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="The organization's key for this provider, stored encrypted. "
        "On change, leave empty to keep the current one.",
    )

    class Meta:
        model = SavedKey
        fields = ["organization", "provider", "label", "zdr"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["secret"].required = self.instance._state.adding

    def clean_provider(self) -> str:
        place: str = self.cleaned_data["provider"].strip()
        if not _known_place(place):
            raise forms.ValidationError(f"No provider or region {place} in the catalog.")
        return place

    def clean_secret(self) -> str:
        secret: str = self.cleaned_data.get("secret") or ""
        if problem := project_id_problem(secret):
            raise forms.ValidationError(f"The key is refused: {problem}.")
        return secret

    def save(self, commit: bool = True) -> SavedKey:
        saved_key: SavedKey = super().save(commit=False)
        if self.cleaned_data.get("secret"):
            saved_key.set_secret(self.cleaned_data["secret"])
        if commit:
            saved_key.save()
        return saved_key


@admin.register(SavedKey)
@method_decorator(sensitive_post_parameters("secret"), name="changeform_view")
class SavedKeyAdmin(admin.ModelAdmin[SavedKey]):
    form = SavedKeyForm
    fields = ["organization", "provider", "label", "zdr", "secret", "state"]
    list_display = ["organization", "provider", "label", "zdr", "state", "created_at"]
    list_display_links = ["organization", "provider"]
    list_editable = ["zdr"]
    list_filter = ["zdr", "organization"]
    search_fields = ["organization__slug", "provider", "label"]
    list_select_related = ["organization"]
    readonly_fields = ["state"]

    @admin.display(description="State")
    def state(self, saved_key: SavedKey) -> str:
        """In use, or skipped because the current MOMOR_ENCRYPTION_KEY cannot decrypt it."""
        if not saved_key.secret_encrypted:
            return "-"
        if saved_key.readable:
            return "in use"
        return "cannot be decrypted (MOMOR_ENCRYPTION_KEY changed): skipped, save it again"


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin[Budget]):
    """The organizations' budgets, read: their owners and admins set them (the members' UI and
    the management API), where each is checked against the organization's keys and members."""

    list_display = ["organization", "scope", "api_key", "member", "period", "amount", "updated_at"]
    list_filter = ["scope", "period"]
    search_fields = ["organization__slug", "api_key__name", "member__username"]
    list_select_related = ["organization", "api_key", "member"]
    fields = readonly_fields = ("organization", "scope", "api_key", "member", "period", "amount",
                                "created_at", "updated_at")  # fmt: skip
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
