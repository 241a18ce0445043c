"""Typed readers for Momor's environment variables; each fails loudly on a bad value."""

from __future__ import annotations

import math
import os
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

N = TypeVar("N", int, float, Decimal)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None
    return _within(name, raw, value, minimum, maximum)


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> float:
    """A finite number; `above`: a bound it must exceed (a time-out above 0)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name} must be a finite number, not {raw!r}")
    if above is not None and value <= above:
        raise ImproperlyConfigured(f"{name} must be above {above:g}, not {raw!r}")
    return _within(name, raw, value, minimum, maximum)


def env_decimal(name: str, default: str, *, minimum: Decimal, maximum: Decimal) -> Decimal:
    """An exact number (money, a fee) within its bounds."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return Decimal(default)
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None
    if not value.is_finite():
        raise ImproperlyConfigured(f"{name} must be a finite number, not {raw!r}")
    return _within(name, raw, value, minimum, maximum)


def _within(name: str, raw: str, value: N, minimum: N | None, maximum: N | None) -> N:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {raw!r}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, not {raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str) -> str:
    """A secret from NAME, or from the file named by NAME_FILE (Docker/Kubernetes secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name, "")
