"""Load a catalog file (TOML) into the database.

The whole file is validated first; then every provider, region, model and offering is
upserted by its natural key in one transaction. Loading never deletes, and loading the
same file twice changes nothing. The format is in DESIGN.md, "Operator interface"."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

from django.db import models, transaction

from accounts.key_env import key_env_problem
from gateway.catalog import rules
from gateway.catalog.rules import OFFERING_PRICES, Rule, RuleError
from gateway.models import AdapterKind, Model, ModelKind, Offering, Provider, Region

PLACE_FIELDS = ("collects_data", "locations")
PROVIDER_FIELDS = frozenset(
    {"name", "api", "base_url", "key_env", "zdr", "display_name", "regions", *PLACE_FIELDS}
)
REGION_FIELDS = frozenset({"name", "base_url", *PLACE_FIELDS})
MODEL_FIELDS = frozenset(
    {
        "id",
        "name",
        "kind",
        "released",
        "deprecated",
        "tiers",
        "auto",
        "context_length",
        "max_output_tokens",
    }
)
OFFERING_CAPABILITIES = (
    "tools",
    "json_schema",
    "reasoning_efforts",
    "input_modalities",
    "parameters",
    "quantization",
)
OFFERING_FIELDS = frozenset(
    {"model", "provider", "upstream_id", "enabled", *OFFERING_PRICES, *OFFERING_CAPABILITIES}
)

Values = dict[str, object]
M = TypeVar("M", bound=models.Model)


class CatalogError(Exception):
    """A catalog file that cannot be loaded; the message is one line naming the culprit."""


# Reading the file ---------------------------------------------------------------------


@dataclass(frozen=True)
class RegionSpec:
    name: str
    base_url: str
    values: Values = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"region '{self.name}'"


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    values: Values
    regions: tuple[RegionSpec, ...]

    @property
    def label(self) -> str:
        return f"provider '{self.name}'"


@dataclass(frozen=True)
class ModelSpec:
    id: str
    values: Values

    @property
    def label(self) -> str:
        return f"model '{self.id}'"


@dataclass(frozen=True)
class OfferingSpec:
    model: str
    root: str
    region: str | None
    values: Values

    @property
    def place(self) -> str:
        return f"{self.root}@{self.region}" if self.region else self.root

    @property
    def label(self) -> str:
        return f"offering '{self.model}' on '{self.place}'"


@dataclass(frozen=True)
class Catalog:
    providers: tuple[ProviderSpec, ...]
    models: tuple[ModelSpec, ...]
    offerings: tuple[OfferingSpec, ...]


class _Required:
    pass


REQUIRED = _Required()


class _Table:
    """One table of the file, read field by field; every complaint names the table."""

    def __init__(self, data: object, label: str, fields: frozenset[str]) -> None:
        self.label = label
        if not isinstance(data, dict):
            self.fail("must be a table")
        self.data: dict[str, object] = data
        unknown = sorted(set(data) - fields)
        if unknown:
            self.fail(f"unknown field '{unknown[0]}'")

    def fail(self, message: str) -> NoReturn:
        raise CatalogError(f"{self.label}: {message}")

    def _value(self, key: str, default: object) -> object:
        if key in self.data:
            return self.data[key]
        if isinstance(default, _Required):
            self.fail(f"missing required field '{key}'")
        return default

    def text(self, key: str, *, max_length: int, default: str | _Required = REQUIRED) -> str:
        value = self._value(key, default)
        if not isinstance(value, str):
            self.fail(f"'{key}' must be a string")
        if default is REQUIRED and not value.strip():
            self.fail(f"'{key}' must not be empty")
        if len(value) > max_length:
            self.fail(f"'{key}' is longer than {max_length} characters")
        return value

    def ruled(self, key: str, rule: Rule, default: object = REQUIRED) -> Any:
        """The field's value as its rule (gateway/catalog/rules.py) stores it."""
        try:
            return rule(key, self._value(key, default))
        except RuleError as exc:
            self.fail(str(exc))

    def flag(self, key: str, default: bool | None) -> bool | None:
        value = self._value(key, default)
        if value is not None and not isinstance(value, bool):
            self.fail(f"'{key}' must be true or false")
        return value

    def day(self, key: str) -> date | None:
        value = self._value(key, None)
        if value is not None and (not isinstance(value, date) or isinstance(value, datetime)):
            self.fail(f"'{key}' must be a date such as 2025-08-07")
        return value

    def tables(self, key: str, header: str) -> list[object]:
        value = self._value(key, [])
        if not isinstance(value, list):
            self.fail(f"'{key}' must be an array of tables ([[{header}]])")
        return value


def _label(kind: str, index: int, data: object, *keys: str) -> str:
    names = [data.get(key) for key in keys] if isinstance(data, dict) else []
    if names and all(isinstance(name, str) and name for name in names):
        return f"{kind} " + " on ".join(f"'{name}'" for name in names)
    return f"{kind} #{index}"


def _items(data: Mapping[str, object], key: str) -> list[object]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise CatalogError(f"'{key}' must be an array of tables ([[{key}]])")
    return value


class _Spec(Protocol):
    @property
    def label(self) -> str: ...


def _unique(specs: Iterable[_Spec]) -> None:
    """Each spec's label names its natural key, so two equal labels are one row twice."""
    seen: set[str] = set()
    for spec in specs:
        if spec.label in seen:
            raise CatalogError(f"duplicate {spec.label}")
        seen.add(spec.label)


def _check_name(table: _Table) -> str:
    table.text("name", max_length=50)
    name: str = table.ruled("name", rules.name)
    return name


def _parse_region(table: _Table) -> RegionSpec:
    name = _check_name(table)
    values: Values = {
        "base_url": _url(table),
        "collects_data": table.flag("collects_data", None),
        "locations": table.ruled("locations", rules.locations, []),
    }
    return RegionSpec(name=name, base_url=str(values["base_url"]), values=values)


def _parse_regions(table: _Table, provider: str) -> tuple[RegionSpec, ...]:
    kind = f"provider '{provider}': region"
    regions = tuple(
        _parse_region(_Table(item, _label(kind, index, item, "name"), REGION_FIELDS))
        for index, item in enumerate(table.tables("regions", "providers.regions"), 1)
    )
    try:
        _unique(regions)
    except CatalogError as exc:
        table.fail(str(exc))
    return regions


def _parse_provider(table: _Table) -> ProviderSpec:
    name = _check_name(table)
    api = table.text("api", max_length=20)
    if api not in AdapterKind.values:
        table.fail(f"unknown api '{api}' (valid: {', '.join(AdapterKind.values)})")
    regions = _parse_regions(table, name)
    key_env = table.text("key_env", max_length=100, default="")
    if key_env and (problem := key_env_problem(key_env)):
        table.fail(problem)
    values: Values = {
        "api": api,
        "base_url": _url(table),
        "key_env": key_env,
        "zdr": table.flag("zdr", False),
        "display_name": table.text("display_name", max_length=100, default=""),
        "collects_data": table.flag("collects_data", True),
        "locations": table.ruled("locations", rules.locations, []),
    }
    return ProviderSpec(name=name, values=values, regions=regions)


def _parse_model(table: _Table) -> ModelSpec:
    table.text("id", max_length=200)
    model_id: str = table.ruled("id", rules.model_id)
    values: Values = {
        "name": table.text("name", max_length=200, default=""),
        "kind": table.ruled("kind", rules.kind, ModelKind.CHAT.value),
        "released": table.day("released"),
        "deprecated": table.flag("deprecated", False),
        "tiers": table.ruled("tiers", rules.tiers, []),
        "auto": table.flag("auto", False),
        "context_length": table.ruled("context_length", rules.count, None),
        "max_output_tokens": table.ruled("max_output_tokens", rules.count, None),
    }
    return ModelSpec(id=model_id, values=values)


def _split_place(table: _Table, place: str) -> tuple[str, str | None]:
    root, at, region = place.partition("@")
    if not _is_name(root) or (at and not _is_name(region)):
        table.fail(f"provider '{place}' must be a provider name or name@region")
    return root, region or None


def _parse_offering(table: _Table) -> OfferingSpec:
    model = table.text("model", max_length=200)
    root, region = _split_place(table, table.text("provider", max_length=101))
    values: Values = {
        "upstream_id": table.text("upstream_id", max_length=200),
        "prompt_price": table.ruled("prompt_price", rules.price),
        # Required of a chat model's offering alone: checked once the model's kind is known.
        "completion_price": table.ruled("completion_price", rules.price, Decimal(0))
        if "completion_price" in table.data
        else None,
        "cache_read_price": table.ruled("cache_read_price", rules.price, Decimal(0)),
        "cache_write_price": table.ruled("cache_write_price", rules.price, Decimal(0)),
        "tools": table.flag("tools", False),
        "json_schema": table.flag("json_schema", False),
        "reasoning_efforts": table.ruled("reasoning_efforts", rules.reasoning_efforts, []),
        "input_modalities": table.ruled("input_modalities", rules.input_modalities, None),
        "parameters": table.ruled("parameters", rules.parameters, []),
        "quantization": _quantization(table),
    }
    enabled = table.flag("enabled", None)
    if enabled is not None:  # left out, an operator's switch in the admin stays as it is
        values["enabled"] = enabled
    return OfferingSpec(model=model, root=root, region=region, values=values)


def _quantization(table: _Table) -> str:
    table.text("quantization", max_length=40, default="")
    value: str = table.ruled("quantization", rules.quantization, "")
    return value


def _url(table: _Table) -> str:
    table.text("base_url", max_length=500)
    value: str = table.ruled("base_url", rules.url)
    return value


def _is_name(text: str) -> bool:
    try:
        rules.name("name", text)
    except rules.RuleError:
        return False
    return True


def catalog_parse(data: Mapping[str, object]) -> Catalog:
    """Validate a parsed TOML document into a Catalog, without touching the database."""
    unknown = sorted(set(data) - {"providers", "models", "offerings"})
    if unknown:
        raise CatalogError(f"unknown top-level key '{unknown[0]}'")
    catalog = Catalog(
        providers=tuple(
            _parse_provider(_Table(item, _label("provider", i, item, "name"), PROVIDER_FIELDS))
            for i, item in enumerate(_items(data, "providers"), 1)
        ),
        models=tuple(
            _parse_model(_Table(item, _label("model", i, item, "id"), MODEL_FIELDS))
            for i, item in enumerate(_items(data, "models"), 1)
        ),
        offerings=tuple(
            _parse_offering(
                _Table(item, _label("offering", i, item, "model", "provider"), OFFERING_FIELDS)
            )
            for i, item in enumerate(_items(data, "offerings"), 1)
        ),
    )
    _unique(catalog.providers)
    _unique(catalog.models)
    _unique(catalog.offerings)
    return catalog


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CatalogError(f"invalid TOML in {path}: the file is not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"invalid TOML in {path}: {exc}") from None


# Checking what the file refers to ------------------------------------------------------


def _known_models(catalog: Catalog) -> dict[str, object]:
    """The kind of each model the file names, from the file or else the database."""
    in_file = {spec.id: spec.values["kind"] for spec in catalog.models}
    wanted = {offering.model for offering in catalog.offerings} - set(in_file)
    stored = Model.objects.filter(id__in=wanted).values_list("id", "kind")
    return in_file | dict(stored)


def _known_places(catalog: Catalog) -> set[tuple[str, str | None]]:
    places: set[tuple[str, str | None]] = set()
    for spec in catalog.providers:
        places.add((spec.name, None))
        places.update((spec.name, region.name) for region in spec.regions)
    roots = {offering.root for offering in catalog.offerings}
    stored_roots = Provider.objects.filter(name__in=roots).values_list("name", flat=True)
    places.update((name, None) for name in stored_roots)
    stored_regions = Region.objects.filter(provider__name__in=roots)
    places.update(stored_regions.values_list("provider__name", "name"))
    return places


def _check_references(catalog: Catalog) -> None:
    """Every offering's model, provider and region exists, in the file or in the database."""
    models_known = _known_models(catalog)
    places = _known_places(catalog)
    for offering in catalog.offerings:
        if offering.model not in models_known:
            raise CatalogError(f"{offering.label}: unknown model '{offering.model}'")
        if (offering.root, None) not in places:
            raise CatalogError(f"{offering.label}: unknown provider '{offering.root}'")
        if (offering.root, offering.region) not in places:
            raise CatalogError(f"{offering.label}: unknown region '{offering.place}'")
        _check_prices(offering, models_known[offering.model])


def _check_prices(offering: OfferingSpec, kind: object) -> None:
    """A chat model's offering states its completion price; an embedding model's is priced
    by prompt tokens alone."""
    values = offering.values
    if kind != ModelKind.EMBEDDING:
        if values["completion_price"] is None:
            raise CatalogError(f"{offering.label}: missing required field 'completion_price'")
        return
    for key in ("completion_price", "cache_read_price", "cache_write_price"):
        if values[key]:
            raise CatalogError(
                f"{offering.label}: '{offering.model}' is an embedding model, priced by "
                f"prompt_price alone: '{key}' must be 0 or left out"
            )
    values["completion_price"] = Decimal(0)


# Writing it ----------------------------------------------------------------------------


@dataclass
class KindCounts:
    created: int = 0
    changed: int = 0
    unchanged: int = 0

    def add(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


@dataclass
class CatalogReport:
    """What one load did, counted per kind of row."""

    providers: KindCounts = field(default_factory=KindCounts)
    regions: KindCounts = field(default_factory=KindCounts)
    models: KindCounts = field(default_factory=KindCounts)
    offerings: KindCounts = field(default_factory=KindCounts)

    def lines(self) -> list[str]:
        kinds = ("providers", "regions", "models", "offerings")
        return [
            f"{kind}: {counts.created} created, {counts.changed} changed, "
            f"{counts.unchanged} unchanged"
            for kind, counts in ((kind, getattr(self, kind)) for kind in kinds)
        ]


def _upsert_row(model: type[M], key: Values, values: Values, keep: bool) -> tuple[M, str]:
    """Create the row with this natural key, or update the fields that differ (none: `keep`)."""
    row = model._default_manager.filter(**key).first()
    if row is None:
        return model._default_manager.create(**key, **values), "created"
    if keep:
        return row, "unchanged"
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, values[name])
    if changed:
        row.save(update_fields=[*changed, "updated_at"])
    return row, "changed" if changed else "unchanged"


def _upsert_providers(catalog: Catalog, report: CatalogReport, keep: bool) -> None:
    for spec in catalog.providers:
        provider, outcome = _upsert_row(Provider, {"name": spec.name}, spec.values, keep)
        report.providers.add(outcome)
        for region in spec.regions:
            key: Values = {"provider_id": provider.pk, "name": region.name}
            report.regions.add(_upsert_row(Region, key, region.values, keep)[1])


def _upsert_models(catalog: Catalog, report: CatalogReport, keep: bool) -> None:
    for spec in catalog.models:
        report.models.add(_upsert_row(Model, {"id": spec.id}, spec.values, keep)[1])


def _upsert_offerings(catalog: Catalog, report: CatalogReport, keep: bool) -> None:
    roots = {offering.root for offering in catalog.offerings}
    provider_ids = dict(Provider.objects.filter(name__in=roots).values_list("name", "pk"))
    region_ids = {
        (root, name): pk
        for root, name, pk in Region.objects.filter(provider__name__in=roots).values_list(
            "provider__name", "name", "pk"
        )
    }
    for spec in catalog.offerings:
        key: Values = {
            "model_id": spec.model,
            "provider_id": provider_ids[spec.root],
            "region_id": region_ids[(spec.root, spec.region)] if spec.region else None,
        }
        report.offerings.add(_upsert_row(Offering, key, spec.values, keep)[1])


def catalog_load(path: Path, *, keep_existing: bool = False) -> CatalogReport:
    """Validate the catalog file at `path`, then upsert all of it in one transaction; with
    `keep_existing`, only create the rows the database lacks and leave the others as they are
    (an operator's edits in the admin stay).

    Raises CatalogError, with nothing written, when any part of the file is invalid."""
    catalog = catalog_parse(_read_toml(path))
    with transaction.atomic():
        _check_references(catalog)
        report = CatalogReport()
        _upsert_providers(catalog, report, keep_existing)
        _upsert_models(catalog, report, keep_existing)
        _upsert_offerings(catalog, report, keep_existing)
    return report
