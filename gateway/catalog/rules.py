"""What each catalog field may hold, checked in one place for every way an operator writes it:
the catalog file (`load_catalog`) and the admin's forms.

A rule takes a field's name and its value as read (TOML's types, or what a form field
parsed), and returns the value as stored or raises RuleError with one line naming the field.
Bounds come from the columns themselves, so a value that passes always fits its column."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import cast
from urllib.parse import urlsplit

from django.db import models

from accounts.field_bounds import INTEGER_MAX
from gateway.models import Model, ModelKind, Offering, Provider

# Ordered from shallowest to deepest: routing picks the nearest deeper one a model takes.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
INPUT_MODALITIES = ("image", "audio", "file")
OFFERING_PRICES = ("prompt_price", "completion_price", "cache_read_price", "cache_write_price")

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$")
_NAME_RULE = "must be lowercase letters, digits, - or _"
_WORD_RULE = "must be letters, digits, '.', '_', ':' or '-'"

Rule = Callable[[str, object], object]


class RuleError(ValueError):
    """A value a catalog field may not hold; the message is one line naming the field."""


def _column(model: type[models.Model], key: str) -> models.Field[object, object]:
    return cast("models.Field[object, object]", model._meta.get_field(key))


def price(key: str, value: object) -> Decimal:
    """USD per million tokens: a finite, non-negative number that fits the offering's column."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise RuleError(f"'{key}' must be a number (USD per million tokens)")
    column = cast("models.DecimalField[Decimal, Decimal]", _column(Offering, key))
    places = column.decimal_places or 0
    ceiling = Decimal(10) ** ((column.max_digits or 0) - places)
    amount = value if isinstance(value, Decimal) else Decimal(str(value))
    if not amount.is_finite() or amount >= ceiling:
        raise RuleError(f"'{key}' must be a finite price under {ceiling}")
    if amount < 0:
        raise RuleError(f"'{key}' must not be negative")
    if amount != round(amount, places):
        raise RuleError(f"'{key}' has more than {places} decimal places")
    return amount


def kind(key: str, value: object) -> str:
    """What a model answers: chat or embedding."""
    if value not in ModelKind.values:
        raise RuleError(f"'{key}' must be one of {', '.join(ModelKind.values)}")
    return str(value)


def count(key: str, value: object) -> int | None:
    """A token count (context_length, max_output_tokens): empty, or a whole number above 0."""
    if value is None:
        return None
    if type(value) is not int or value <= 0:
        raise RuleError(f"'{key}' must be a positive whole number")
    if value > INTEGER_MAX:
        raise RuleError(f"'{key}' must be at most {INTEGER_MAX}")
    return value


def model_id(key: str, value: object) -> str:
    """publisher/name, lowercase."""
    if not isinstance(value, str) or not _MODEL_ID.match(value):
        raise RuleError(
            f"{key} must be publisher/name in lowercase letters, digits, '.', '-' or '_'"
        )
    most = _column(Model, "id").max_length or 0
    if len(value) > most:
        raise RuleError(f"{key} is longer than {most} characters")
    return value


def name(key: str, value: object) -> str:
    """A provider's or a region's name, as provider.order and name@region write it."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise RuleError(f"{key} '{value}' {_NAME_RULE}")
    most = _column(Provider, "name").max_length or 0
    if len(value) > most:
        raise RuleError(f"{key} '{value}' is longer than {most} characters")
    return value


def url(key: str, value: object) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise RuleError(f"'{key}' must be an http or https URL, not '{value}'")
    return str(value)


def _strings(key: str, value: object) -> list[str]:
    if value is None:  # an admin form's empty JSON field
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RuleError(f"'{key}' must be a list of strings")
    return value


def names(key: str, value: object, what: str, valid: tuple[str, ...] | None = None) -> list[str]:
    """Distinct names, each from `valid` (kept in its order) or else lowercase."""
    items = _strings(key, value)
    for index, item in enumerate(items):
        if valid is not None and item not in valid:
            raise RuleError(f"unknown {what} '{item}' (valid: {', '.join(valid)})")
        if valid is None and not _NAME.match(item):
            raise RuleError(f"{what} '{item}' {_NAME_RULE}")
        if item in items[:index]:
            raise RuleError(f"duplicate {what} '{item}'")
    return sorted(items, key=valid.index) if valid else list(items)


def words(key: str, value: object, what: str) -> list[str]:
    """Identifiers such as parameter names or locations: letters, digits, . _ : -"""
    items = _strings(key, value)
    for item in items:
        if not _WORD.match(item):
            raise RuleError(f"{what} '{item}' {_WORD_RULE}")
    return list(dict.fromkeys(items))


def tiers(key: str, value: object) -> list[str]:
    return names(key, value, "tier")


def reasoning_efforts(key: str, value: object) -> list[str]:
    return names(key, value, "reasoning effort", REASONING_EFFORTS)


def input_modalities(key: str, value: object) -> list[str] | None:
    """None: what the provider's API carries; a list (even empty) narrows it."""
    return None if value is None else names(key, value, "input modality", INPUT_MODALITIES)


def parameters(key: str, value: object) -> list[str]:
    return words(key, value, "parameter")


def locations(key: str, value: object) -> list[str]:
    return words(key, value, "location")


def quantization(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise RuleError(f"'{key}' must be a string")
    if value and not _WORD.match(value):
        raise RuleError(f"{key} '{value}' {_WORD_RULE}")
    return value.lower()


PLACE_RULES: dict[str, Rule] = {"name": name, "base_url": url, "locations": locations}
MODEL_RULES: dict[str, Rule] = {
    "id": model_id,
    "kind": kind,
    "tiers": tiers,
    "context_length": count,
    "max_output_tokens": count,
}
OFFERING_RULES: dict[str, Rule] = {
    **dict.fromkeys(OFFERING_PRICES, price),
    "reasoning_efforts": reasoning_efforts,
    "input_modalities": input_modalities,
    "parameters": parameters,
    "quantization": quantization,
}
