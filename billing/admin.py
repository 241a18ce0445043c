"""The operators' admin for call records and the credits ledger.

Generations and their attempts are records: viewable, never edited. The ledger is
append-only: the one write is an adjustment, posted through `credits_post` so the
organization's balance moves with it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Min, Q, QuerySet
from django.http import HttpRequest

from accounts.models import Organization
from billing.ledger.credits import (
    KEY_MAX,
    CreditsError,
    credits_post,
    credits_replayed,
    operator_key,
)
from billing.models import (
    MONEY_DIGITS,
    MONEY_PLACES,
    Attempt,
    DeadLetter,
    EntryKind,
    Generation,
    LedgerEntry,
)
from core.formatting import clipped, usd
from core.paging import EstimatedCountPaginator

# What the organization's balance column holds, either side of zero.
BALANCE_BOUND = Decimal(10) ** (MONEY_DIGITS - MONEY_PLACES)


class ReadOnlyAdminMixin:
    """Viewable, never added, changed or deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AttemptInline(ReadOnlyAdminMixin, admin.TabularInline[Attempt, Generation]):
    model = Attempt
    fields = [
        "number",
        "model",
        "provider",
        "region",
        "upstream_id",
        "key_source",
        "http_status",
        "error",
        "latency_ms",
        "first_token_ms",
        "prompt_tokens",
        "completion_tokens",
        "cost",
    ]
    readonly_fields = ["number"]
    extra = 0

    @admin.display(description="#", ordering="position")
    def number(self, obj: Attempt) -> int:
        """The attempt's place in the call, counted from 1 (`position` counts from 0)."""
        return obj.position + 1


class ProviderFilter(admin.SimpleListFilter):
    """The providers generations name, read from the provider index one value at a time
    (Django's own filter would read every row for its menu)."""

    title = "provider"
    parameter_name = "provider"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(name, name) for name in distinct_providers()]

    def queryset(self, request: Any, queryset: QuerySet[Generation]) -> QuerySet[Generation]:
        value = self.value()
        return queryset.filter(provider=value) if value else queryset


def distinct_providers(most: int = 100) -> list[str]:
    """The providers named by generations (up to `most`), a skip scan of their index: one
    short query per value, however many rows there are."""
    found: list[str] = []
    rows = Generation.objects.exclude(provider="")
    while len(found) < most:
        after = rows.filter(provider__gt=found[-1]) if found else rows
        following = after.aggregate(first=Min("provider"))["first"]
        if following is None:
            break
        found.append(following)
    return found


@admin.register(Generation)
class GenerationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[Generation]):
    inlines = [AttemptInline]
    list_display = [
        "request",
        "organization",
        "model",
        "provider",
        "status",
        "streamed",
        "tokens",
        "cost_usd",
        "charge_capped",
        "created_at",
    ]
    # Each filter and search reads an index (billing migrations 0006, 0011); none lists or counts
    # the whole table: see EstimatedCountPaginator, ProviderFilter and get_search_results.
    list_filter = [
        "status",
        "api",  # its menu is its choices; generation_api (billing migration 0011) finds the rows
        ProviderFilter,
        "streamed",
        "organization",
        ("created_at", admin.DateFieldListFilter),
    ]
    search_fields = ["request_id", "model", "organization__slug"]
    search_help_text = "An exact request ID, model (publisher/name) or organization slug."
    list_select_related = ["organization"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    sortable_by = ["created_at"]  # any other order would sort every row

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Generation], search_term: str
    ) -> tuple[QuerySet[Generation], bool]:
        """Exact matches only: each is an index lookup, where a substring match would read
        every row."""
        term = search_term.strip()
        if not term:
            return queryset, False
        orgs = list(Organization.objects.filter(slug=term).values_list("pk", flat=True))
        found = Q(request_id=term) | Q(model=term) | Q(organization_id__in=orgs)
        return queryset.filter(found), False

    @admin.display(description="Request ID", ordering="request_id")
    def request(self, generation: Generation) -> str:
        return clipped(generation.request_id)

    @admin.display(description="Tokens (prompt + completion)")
    def tokens(self, generation: Generation) -> str:
        return f"{generation.prompt_tokens} + {generation.completion_tokens}"

    @admin.display(description="Cost", ordering="cost")
    def cost_usd(self, generation: Generation) -> str:
        return usd(generation.cost)


class AdjustmentForm(forms.ModelForm[LedgerEntry]):
    """An operator's signed correction of an organization's credits."""

    idempotency_key = forms.CharField(
        required=False,
        max_length=KEY_MAX,
        help_text="Optional: posting again with this key posts nothing and shows the first "
        "entry; another amount under it is refused.",
    )

    class Meta:
        model = LedgerEntry
        fields = ["organization", "amount", "note", "idempotency_key"]
        help_texts = {"amount": "USD, signed: negative to take credits away."}

    def clean_amount(self) -> Decimal:
        amount: Decimal = self.cleaned_data["amount"]
        if amount == 0:
            raise forms.ValidationError("An adjustment must move the balance.")
        return amount

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization, amount = cleaned.get("organization"), cleaned.get("amount")
        if organization is not None and amount is not None and not self._replays(cleaned):
            after = organization.balance + amount
            if abs(after) >= BALANCE_BOUND:
                self.add_error(
                    "amount",
                    f"The balance would be {after.normalize():f} USD: it must stay under "
                    f"{BALANCE_BOUND} USD.",
                )
        return cleaned

    def _replays(self, cleaned: dict[str, Any]) -> bool:
        """Whether the key was posted already with this same adjustment (a refused one adds
        its error and counts as a replay, so that nothing is posted)."""
        key = cleaned.get("idempotency_key")
        if not key:
            return False
        try:
            stored = operator_key(cleaned["organization"].pk, key)
            replayed = credits_replayed(stored, kind=EntryKind.ADJUSTMENT, amount=cleaned["amount"])
        except CreditsError as exc:
            self.add_error("idempotency_key", str(exc))
            return True
        return replayed is not None


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin[LedgerEntry]):
    form = AdjustmentForm
    list_display = [
        "created_at",
        "organization",
        "kind",
        "amount_usd",
        "balance_after_usd",
        "note",
        "created_by",
    ]
    list_filter = ["kind", "organization", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["organization__slug", "note", "idempotency_key"]
    list_select_related = ["organization", "created_by"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    @admin.display(description="Amount", ordering="amount")
    def amount_usd(self, entry: LedgerEntry) -> str:
        return usd(entry.amount)

    @admin.display(description="Balance after", ordering="balance_after")
    def balance_after_usd(self, entry: LedgerEntry) -> str:
        return usd(entry.balance_after)

    def get_fields(self, request: HttpRequest, obj: LedgerEntry | None = None) -> tuple[str, ...]:
        if obj is None:
            return tuple(AdjustmentForm.Meta.fields)
        return (
            "organization",
            "kind",
            "amount",
            "balance_after",
            "note",
            "generation",
            "idempotency_key",
            "created_by",
            "created_at",
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: LedgerEntry, form: Any, change: bool) -> None:
        entry, _ = credits_post(
            organization_id=obj.organization_id,
            kind=EntryKind.ADJUSTMENT,
            amount=obj.amount,
            note=obj.note,
            idempotency_key=form.cleaned_data.get("idempotency_key") or None,
            created_by_id=request.user.pk,
        )
        _become(obj, entry)


def _become(obj: LedgerEntry, entry: LedgerEntry) -> None:
    """Make the admin's unsaved instance the posted entry, for its log and redirect."""
    for field in entry._meta.concrete_fields:
        setattr(obj, field.attname, getattr(entry, field.attname))
    obj._state.adding = False
    obj._state.db = entry._state.db


@admin.register(DeadLetter)
class DeadLetterAdmin(ReadOnlyAdminMixin, admin.ModelAdmin[DeadLetter]):
    """Records that could not be stored: what arrived, why it failed, and its charge."""

    list_display = ["parked_at", "request_id", "organization_id", "cost", "charge_posted", "why"]
    list_filter = ["charge_posted"]
    search_fields = ["request_id"]
    fields = [
        "request_id",
        "organization_id",
        "cost",
        "charge_posted",
        "parked_at",
        "error",
        "payload",
    ]
    date_hierarchy = "parked_at"

    @admin.display(description="Why")
    def why(self, letter: DeadLetter) -> str:
        return letter.error[:120]
