"""The catalog held in memory: built from the database in one pass, read by every call
without a query, rebuilt when the database's catalog fingerprint changes."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db.models import Count, Max

from accounts.key_env import key_env_problem
from accounts.secrets import UnreadableSecret
from billing.calls.cost import floor
from core.redaction import note_secret
from gateway.models import Model, ModelKind, Offering, Provider, Region
from gateway.providers import adapter_for

log = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    name: str
    label: str
    api: str
    base_url: str
    zdr: bool
    momor_key: str
    collects_data: bool = True
    locations: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens."""

    prompt: Decimal
    completion: Decimal
    cache_read: Decimal
    cache_write: Decimal

    strings: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)
    """As a record keeps them, built once (shared: read, never written)."""

    def __post_init__(self) -> None:
        # A price below zero (a row from before the catalog's rules) counts as zero: admission
        # reserves from these, and a reservation below zero wedges its counters.
        for name in ("prompt", "completion", "cache_read", "cache_write"):
            object.__setattr__(self, name, floor(getattr(self, name)))
        strings = {
            "prompt": str(self.prompt),
            "completion": str(self.completion),
            "cache_read": str(self.cache_read),
            "cache_write": str(self.cache_write),
        }
        object.__setattr__(self, "strings", strings)

    def as_dict(self) -> dict[str, str]:
        return self.strings


@dataclass(frozen=True, slots=True)
class OfferingInfo:
    id: int
    model_id: str
    provider: ProviderInfo
    region: str
    base_url: str
    upstream_id: str
    prices: Prices
    tools: bool
    json_schema: bool
    reasoning_efforts: tuple[str, ...]
    input_modalities: frozenset[str]
    """What it takes beyond text: its declaration, within what its provider's API carries."""
    context_length: int | None = None
    """The model's context window in tokens, where the catalog gives it."""
    max_output_tokens: int | None = None
    """The model's largest answer in tokens, where the catalog gives it."""
    parameters: frozenset[str] = frozenset()
    """The request parameters it declares it takes; empty: the OpenAI common set."""
    quantization: str = ""
    collects_data: bool = True
    """Whether the agreement of its provider (or region) may keep or train on the data."""
    locations: frozenset[str] = frozenset()
    """Its region's name and the locations its region and provider declare, in lowercase."""

    @property
    def place(self) -> str:
        return f"{self.provider.name}@{self.region}" if self.region else self.provider.name

    @property
    def sort_price(self) -> Decimal:
        return self.prices.prompt + self.prices.completion


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    released: date | None
    deprecated: bool
    tiers: frozenset[str]
    auto: bool
    offerings: tuple[OfferingInfo, ...]
    kind: str = ModelKind.CHAT
    """What it answers: "chat" (chat, Messages and Responses calls) or "embedding"."""

    @property
    def cheapest(self) -> Decimal:
        return min((o.sort_price for o in self.offerings), default=Decimal("Infinity"))


@dataclass(frozen=True, slots=True)
class Catalog:
    models: dict[str, ModelInfo] = field(default_factory=dict)
    providers: dict[str, ProviderInfo] = field(default_factory=dict)
    places: frozenset[str] = frozenset()
    fingerprint: tuple[object, ...] = ()


def catalog_fingerprint() -> tuple[object, ...]:
    """A cheap summary that changes whenever any catalog row is added, changed or removed."""
    parts: list[object] = []
    for table in (Provider, Region, Model, Offering):
        agg = table.objects.aggregate(n=Count("pk"), at=Max("updated_at"))
        parts.extend((agg["n"], agg["at"]))
    return tuple(parts)


def catalog_build() -> Catalog:
    """A snapshot that no write overlapped: rebuilt while the fingerprint moved during it."""
    for _ in range(5):
        catalog = _build()
        if catalog_fingerprint() == catalog.fingerprint:
            break
    return catalog


def _build() -> Catalog:
    fingerprint = catalog_fingerprint()
    providers = {p.name: _provider_info(p) for p in Provider.objects.all()}
    regions = {(r.provider_id, r.name): r for r in Region.objects.select_related("provider")}
    by_model: dict[str, list[OfferingInfo]] = {}
    offerings = Offering.objects.filter(enabled=True).select_related("provider", "region", "model")
    for row in offerings:
        by_model.setdefault(row.model_id, []).append(_offering_info(row, providers))
    models = {m.id: _model_info(m, by_model.get(m.id, [])) for m in Model.objects.all()}
    places = set(providers) | {f"{r.provider.name}@{name}" for (_, name), r in regions.items()}
    return Catalog(models, providers, frozenset(places), fingerprint)


def _provider_info(row: Provider) -> ProviderInfo:
    key = _stored_key(row) or _key_from_env(row)
    return ProviderInfo(
        row.name,
        row.label,
        row.api,
        row.base_url.rstrip("/"),
        row.zdr,
        key,
        collects_data=row.collects_data,
        locations=frozenset(place.lower() for place in _strings(row.locations)),
    )


def _stored_key(row: Provider) -> str:
    """Momor's key stored for the provider; one that cannot be decrypted is skipped (the
    provider falls back to `key_env`) rather than failing the whole catalog."""
    try:
        return row.stored_key()
    except UnreadableSecret:
        log.error(
            "the stored key of provider %s cannot be decrypted with the current "
            "MOMOR_ENCRYPTION_KEY: skipped, %s",
            row.name, f"using {row.key_env}" if row.key_env else "the provider has no key",
        )  # fmt: skip
        return ""


def _key_from_env(row: Provider) -> str:
    """Momor's key from the variable key_env names, if the rule lets it name that one (a row
    written before the rule, or behind the admin's back, gets no key)."""
    if not row.key_env:
        return ""
    problem = key_env_problem(row.key_env)
    if problem is not None:
        log.warning("provider %s has no key: %s", row.name, problem)
        return ""
    key = os.environ.get(row.key_env, "")
    note_secret(key)
    return key


def _offering_info(row: Offering, providers: dict[str, ProviderInfo]) -> OfferingInfo:
    provider = providers[row.provider.name]
    base_url = row.region.base_url.rstrip("/") if row.region else provider.base_url
    return OfferingInfo(
        id=row.pk,
        model_id=row.model_id,
        provider=provider,
        region=row.region.name if row.region else "",
        base_url=base_url,
        upstream_id=row.upstream_id,
        prices=Prices(
            row.prompt_price, row.completion_price, row.cache_read_price, row.cache_write_price
        ),
        tools=row.tools,
        json_schema=row.json_schema,
        reasoning_efforts=_strings(row.reasoning_efforts),
        input_modalities=_input_kinds(row, provider),
        context_length=row.model.context_length,
        max_output_tokens=row.model.max_output_tokens,
        parameters=frozenset(_strings(row.parameters)),
        quantization=row.quantization.lower(),
        collects_data=_collects_data(row, provider),
        locations=_locations(row, provider),
    )


def _input_kinds(row: Offering, provider: ProviderInfo) -> frozenset[str]:
    adapter = adapter_for(provider.api)
    carried = adapter.input_kinds if adapter is not None else frozenset()
    declared = None if row.input_modalities is None else _strings(row.input_modalities)
    return carried if declared is None else carried & frozenset(declared)


def _collects_data(row: Offering, provider: ProviderInfo) -> bool:
    region = row.region
    if region is not None and region.collects_data is not None:
        return region.collects_data
    return provider.collects_data


def _strings(value: object) -> tuple[str, ...]:
    """A list field's names. A row from before the catalog's rules may hold one name as a
    string ("high"), which must not be read as its letters (tier/h)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def _locations(row: Offering, provider: ProviderInfo) -> frozenset[str]:
    if row.region is None:
        return provider.locations
    own = {row.region.name.lower(), *(place.lower() for place in _strings(row.region.locations))}
    return provider.locations | own


def _model_info(row: Model, offerings: list[OfferingInfo]) -> ModelInfo:
    offerings.sort(key=lambda o: (o.sort_price, o.place))
    return ModelInfo(
        id=row.id,
        released=row.released,
        deprecated=row.deprecated,
        tiers=frozenset(t.lower() for t in _strings(row.tiers)),
        auto=row.auto,
        offerings=tuple(offerings),
        kind=row.kind,
    )
