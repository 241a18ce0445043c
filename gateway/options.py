"""The four fields Momor reads to route a call (model, models, provider, stream), read once and
checked with the spec's refusals; every other field stays in the body untouched."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from accounts.durations import parse_duration
from gateway.errors import GatewayError, invalid_value

ROUTING_FIELDS = ("model", "models", "provider")


@dataclass(frozen=True, slots=True)
class ProviderPrefs:
    order: tuple[str, ...] = ()
    ignore: frozenset[str] = frozenset()
    zdr: bool = False
    deprecated: bool | None = None
    max_age: timedelta | None = None
    max_age_given: bool = False


REQUESTED_COUNT = 8
REQUESTED_CHARS = 200


@dataclass(frozen=True, slots=True)
class CallOptions:
    selectors: tuple[str, ...]
    prefs: ProviderPrefs
    stream: bool
    include_usage: bool


def read_options(body: dict[str, Any], places: frozenset[str]) -> CallOptions:
    """Read the routing fields of a JSON object body; raise GatewayError(400) when unreadable."""
    selectors = _selectors(body, "model") + _selectors(body, "models")
    if not selectors:
        raise invalid_value("The call names no model: set 'model' (or 'models').")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid_value("'stream' must be a boolean")
    stream_options = body.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    return CallOptions(selectors, _prefs(body.get("provider"), places), stream, include_usage)


def requested_selectors(body: dict[str, Any]) -> list[str]:
    """The selectors a body names, read leniently so that a call refused for its routing fields
    is recorded with what it asked for (bounded: a record keeps at most a few short names)."""
    models = body.get("models")
    names = [body.get("model"), *(models if isinstance(models, list) else [])]
    kept = [name.strip()[:REQUESTED_CHARS] for name in names if isinstance(name, str)]
    return [name for name in kept if name][:REQUESTED_COUNT]


def _selectors(body: dict[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise invalid_value(f"'{name}' must be a model selector or a list of them")
    return tuple(v.strip() for v in value)


def _prefs(raw: object, places: frozenset[str]) -> ProviderPrefs:
    if raw is None:
        return ProviderPrefs()
    if not isinstance(raw, dict):
        raise invalid_value("'provider' must be an object")
    _check_sort(raw.get("sort"))
    max_age = _max_age(raw.get("maxAge"))
    return ProviderPrefs(
        order=tuple(_places(raw, "order", places)),
        ignore=frozenset(_places(raw, "ignore", places)),
        zdr=_boolean(raw, "zdr", required=True) or False,
        deprecated=_boolean(raw, "deprecated", required=False),
        max_age=max_age,
        max_age_given=max_age is not None,
    )


def _places(raw: dict[str, Any], name: str, places: frozenset[str]) -> list[str]:
    value = raw.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_value(f"'provider.{name}' must be a list of provider names")
    names = [v.strip().lower() for v in value]
    for place in names:
        if place not in places:
            raise invalid_value(
                f"'provider.{name}' names a provider this deployment does not serve: {place}"
            )
    return names


def _boolean(raw: dict[str, Any], name: str, *, required: bool) -> bool | None:
    if name not in raw or (raw[name] is None and not required):
        return None
    value = raw[name]
    if not isinstance(value, bool):
        raise invalid_value(f"'provider.{name}' must be a boolean")
    return value


def _check_sort(value: object) -> None:
    if value is not None and value != "price":
        raise invalid_value("'provider.sort' must be price, the only order Momor offers")


def _max_age(value: object) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError:
            pass
    raise invalid_value(
        "'provider.maxAge' must be an ISO 8601 duration such as P6M or a TimeSpan such as "
        "180.00:00:00"
    )


def strip_routing(body: dict[str, Any]) -> dict[str, Any]:
    """The body without Momor's routing fields (model is rewritten per offering)."""
    return {k: v for k, v in body.items() if k not in ROUTING_FIELDS}


__all__ = ["CallOptions", "GatewayError", "ProviderPrefs", "read_options", "strip_routing"]
