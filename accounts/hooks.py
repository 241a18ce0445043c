"""What accounts needs from the apps above it, declared here and filled in by them.

`accounts` is the lowest of Momor's layers (docs/architecture.md, "Packages and layers"): it
imports neither `billing` nor `gateway`. Some of its features need something those apps own, so
accounts declares each need as a typed Protocol, and the owning app registers an implementation
in its `AppConfig.ready()`:

- `ProviderPlaces`, registered by `gateway` (`gateway.catalog.places`): the provider roots and
  `name@region` places of the catalog. A saved provider key belongs to the organization, so it
  stays in accounts; the places it may be saved for are the catalog's, which is gateway's.
- `KeySpend`, registered by `billing` (`billing.usage.reads.with_spend`): API keys annotated with
  what each has spent. The keys page belongs with the keys; what a key spent is read from
  billing's records.
- `KeyLimits`, registered by `billing` (`billing.ledger.key_limits.openrouter_fields`): a key's
  limits and usage as OpenRouter's key object writes them, for the key's representation in the
  management API.
- `BudgetSpent`, registered by `billing` (`billing.ledger.budget_spend.spent_now_many`): what
  budgets have spent in their current windows, for the keys and members pages.

Asking for a hook nobody registered is a configuration error (the app is not installed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from decimal import Decimal

    from django.db.models import QuerySet

    from accounts.models import ApiKey, Budget


class ProviderPlaces(Protocol):
    """The places of the provider catalog that an organization may save a key for."""

    def all(self) -> list[str]:
        """Every provider root by name, each followed by its places `name@region`."""
        ...

    def has_provider(self, name: str) -> bool:
        """Whether the catalog has a provider of this root name."""
        ...

    def has_region(self, provider: str, region: str) -> bool:
        """Whether the catalog's provider `provider` has a region of this name."""
        ...


class KeySpend(Protocol):
    """API keys with what they spent."""

    def __call__(self, keys: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        """`keys`, each annotated with `spend`: the USD its generations cost, 0 for none."""
        ...


class KeyLimits(Protocol):
    """Keys' limits and usage, in OpenRouter's key fields."""

    def __call__(self, keys: list[ApiKey]) -> dict[int, dict[str, Any]]:
        """By key id: `limit`, `limit_remaining`, `limit_reset`, `usage`, `usage_daily`,
        `usage_weekly` and `usage_monthly`."""
        ...


class BudgetSpent(Protocol):
    """What budgets have spent in their current windows."""

    def __call__(self, budgets: list[Budget]) -> dict[int, Decimal]:
        """USD by budget id, as the stored records hold it."""
        ...


@dataclass
class _Registered:
    provider_places: ProviderPlaces | None = None
    key_spend: KeySpend | None = None
    key_limits: KeyLimits | None = None
    budget_spent: BudgetSpent | None = None


_registered = _Registered()


def register_provider_places(places: ProviderPlaces) -> None:
    _registered.provider_places = places


def register_key_spend(spend: KeySpend) -> None:
    _registered.key_spend = spend


def register_key_limits(limits: KeyLimits) -> None:
    _registered.key_limits = limits


def register_budget_spent(spent: BudgetSpent) -> None:
    _registered.budget_spent = spent


def provider_places() -> ProviderPlaces:
    if _registered.provider_places is None:
        raise ImproperlyConfigured("no app registered the provider places: install `gateway`")
    return _registered.provider_places


def key_spend() -> KeySpend:
    if _registered.key_spend is None:
        raise ImproperlyConfigured("no app registered the spend of API keys: install `billing`")
    return _registered.key_spend


def key_limits() -> KeyLimits:
    if _registered.key_limits is None:
        raise ImproperlyConfigured("no app registered the limits of API keys: install `billing`")
    return _registered.key_limits


def budget_spent() -> BudgetSpent:
    if _registered.budget_spent is None:
        raise ImproperlyConfigured("no app registered the spend of budgets: install `billing`")
    return _registered.budget_spent
