"""The fields Momor reads to route a call (model, models, provider, stream, session_id) and to
hold its answer to (the tool rules and reasoning fields: `gateway.request.answer_rules`), read once
and checked with the spec's refusals; every other field stays in the body untouched."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any, Literal

from core.durations import parse_duration
from gateway.request.answer_rules import AnswerRules, read_answer_rules
from gateway.request.errors import GatewayError, excerpt, invalid_value

ROUTING_FIELDS = ("model", "models", "provider", "session_id")
# Read by Momor alone, never sent to a provider.
MOMOR_FIELDS = (*ROUTING_FIELDS, "max_tool_calls")
LIST_LIMIT = 100
# `model` and `models` together; each selector, and each name a provider list holds.
SELECTORS_LIMIT = 64
NAME_CHARS = 256
MAX_AGE_CHARS = 64
_LOCATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")

Sort = Literal["price", "throughput", "latency", "quality"]
SORTS: tuple[Sort, ...] = ("price", "throughput", "latency", "quality")


@dataclass(frozen=True, slots=True)
class MaxPrice:
    """USD per million tokens; None leaves that side unbounded."""

    prompt: Decimal | None = None
    completion: Decimal | None = None


@dataclass(frozen=True, slots=True)
class ProviderPrefs:
    order: tuple[str, ...] = ()
    ignore: frozenset[str] = frozenset()
    zdr: bool = False
    deprecated: bool | None = None
    max_age: timedelta | None = None
    max_age_given: bool = False
    only: frozenset[str] = frozenset()
    allow_fallbacks: bool = True
    require_parameters: bool = False
    deny_data_collection: bool = False
    quantizations: frozenset[str] = frozenset()
    regions: frozenset[str] = frozenset()
    max_price: MaxPrice | None = None
    sort: Sort = "price"

    def given(self) -> dict[str, object]:
        """The filters and order this call set, as recorded on its generation."""
        found: dict[str, object] = {
            "only": sorted(self.only),
            "ignore": sorted(self.ignore),
            "quantizations": sorted(self.quantizations),
            "regions": sorted(self.regions),
        }
        found = {name: value for name, value in found.items() if value}
        if not self.allow_fallbacks:
            found["allow_fallbacks"] = False
        if self.require_parameters:
            found["require_parameters"] = True
        if self.deny_data_collection:
            found["data_collection"] = "deny"
        if self.max_price is not None:
            found["max_price"] = {
                side: str(value)
                for side, value in (
                    ("prompt", self.max_price.prompt),
                    ("completion", self.max_price.completion),
                )
                if value is not None
            }
        if self.sort != "price":
            found["sort"] = self.sort
        return found


NO_PREFS = ProviderPrefs()
"""A call that sets no provider preferences (most of them)."""

REQUESTED_COUNT = 8
REQUESTED_CHARS = 200


@dataclass(frozen=True, slots=True)
class CallOptions:
    selectors: tuple[str, ...]
    prefs: ProviderPrefs
    stream: bool
    include_usage: bool
    rules: AnswerRules | None = None


def read_options(body: dict[str, Any], places: frozenset[str]) -> CallOptions:
    """Read the routing fields of a JSON object body; raise GatewayError(400) when unreadable."""
    selectors = _selectors(body, "model") + _selectors(body, "models")
    if len(selectors) > SELECTORS_LIMIT:
        raise invalid_value(
            f"'model' and 'models' name at most {SELECTORS_LIMIT} selectors together; "
            f"this call names {len(selectors):,}."
        )
    if not selectors:
        raise invalid_value("The call names no model: set 'model' (or 'models').")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid_value("'stream' must be a boolean")
    stream_options = body.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    prefs = _prefs(body.get("provider"), places)
    return CallOptions(selectors, prefs, stream, include_usage, read_answer_rules(body))


def requested_selectors(body: dict[str, Any]) -> list[str]:
    """The selectors a body names, read leniently so that a call refused for its routing fields
    is recorded with what it asked for (bounded: a record keeps at most a few short names)."""
    models = body.get("models")
    names = [body.get("model"), *(models[:REQUESTED_COUNT] if isinstance(models, list) else [])]
    kept = [excerpt(name.strip(), REQUESTED_CHARS) for name in names if isinstance(name, str)]
    return [name for name in kept if name][:REQUESTED_COUNT]


def _selectors(body: dict[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise invalid_value(f"'{name}' must be a model selector or a list of them")
    if len(value) > SELECTORS_LIMIT:
        raise invalid_value(
            f"'{name}' names at most {SELECTORS_LIMIT} selectors; it names {len(value):,}."
        )
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise invalid_value(f"'{name}' must be a model selector or a list of them")
    if any(len(v) > NAME_CHARS for v in value):
        raise invalid_value(f"'{name}' holds a selector longer than {NAME_CHARS} characters.")
    return tuple(v.strip() for v in value)


def _prefs(raw: object, places: frozenset[str]) -> ProviderPrefs:
    if raw is None:
        return NO_PREFS
    if not isinstance(raw, dict):
        raise invalid_value("'provider' must be an object")
    max_age = _max_age(raw.get("maxAge"))
    return ProviderPrefs(
        order=tuple(_places(raw, "order", places)),
        ignore=frozenset(_places(raw, "ignore", places)),
        zdr=_boolean(raw, "zdr", required=True) or False,
        deprecated=_boolean(raw, "deprecated", required=False),
        max_age=max_age,
        max_age_given=max_age is not None,
        only=frozenset(_places(raw, "only", places)),
        allow_fallbacks=_boolean(raw, "allow_fallbacks", required=False) is not False,
        require_parameters=_boolean(raw, "require_parameters", required=False) is True,
        deny_data_collection=_data_collection(raw.get("data_collection")),
        quantizations=frozenset(_words(raw, "quantizations", None)),
        regions=frozenset(_words(raw, "regions", _LOCATION)),
        max_price=_max_price(raw.get("max_price")),
        sort=_sort(raw.get("sort")),
    )


def _places(raw: dict[str, Any], name: str, places: frozenset[str]) -> list[str]:
    value = raw.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_value(f"'provider.{name}' must be a list of provider names")
    if len(value) > LIST_LIMIT or any(len(v) > NAME_CHARS for v in value):
        raise invalid_value(
            f"'provider.{name}' must be a list of at most {LIST_LIMIT} provider names of at "
            f"most {NAME_CHARS} characters"
        )
    names = [v.strip().lower() for v in value]
    for place in names:
        if place not in places:
            raise invalid_value(
                f"'provider.{name}' names a provider this deployment does not serve: "
                f"{excerpt(place)}"
            )
    return names


def _boolean(raw: dict[str, Any], name: str, *, required: bool) -> bool | None:
    if name not in raw or (raw[name] is None and not required):
        return None
    value = raw[name]
    if not isinstance(value, bool):
        raise invalid_value(f"'provider.{name}' must be a boolean")
    return value


def _sort(value: object) -> Sort:
    if value is None:
        return "price"
    for sort in SORTS:
        if value == sort:
            return sort
    raise invalid_value(f"'provider.sort' must be one of {', '.join(SORTS)}")


def _data_collection(value: object) -> bool:
    if value is None or value == "allow":
        return False
    if value == "deny":
        return True
    raise invalid_value("'provider.data_collection' must be allow or deny")


def _words(raw: dict[str, Any], name: str, pattern: re.Pattern[str] | None) -> list[str]:
    """A list of names compared without case: quantizations, regions."""
    value = raw.get(name)
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > LIST_LIMIT
        or not all(isinstance(v, str) and 0 < len(v.strip()) <= NAME_CHARS for v in value)
        or (pattern is not None and not all(pattern.match(v.strip()) for v in value))
    ):
        raise invalid_value(
            f"'provider.{name}' must be a list of at most {LIST_LIMIT} names"
            + (" of letters, digits, '.', '_', ':' or '-'" if pattern is not None else "")
        )
    return [v.strip().lower() for v in value]


def _max_price(value: object) -> MaxPrice | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_value("'provider.max_price' must be an object with prompt and completion")
    return MaxPrice(_price(value, "prompt"), _price(value, "completion"))


def _price(raw: dict[str, Any], side: str) -> Decimal | None:
    value = raw.get(side)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise invalid_value(
            f"'provider.max_price.{side}' must be a number of USD per million tokens, 0 or more"
        )
    if value == float("inf"):
        return None
    return Decimal(str(value))


def _max_age(value: object) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= MAX_AGE_CHARS:
        try:
            return parse_duration(value)
        except ValueError:
            pass
    raise invalid_value(
        "'provider.maxAge' must be an ISO 8601 duration such as P6M or a TimeSpan such as "
        "180.00:00:00"
    )


def strip_routing(body: dict[str, Any]) -> dict[str, Any]:
    """The body without the fields Momor reads alone: routing (model is rewritten per
    offering) and max_tool_calls."""
    return {k: v for k, v in body.items() if k not in MOMOR_FIELDS}


__all__ = [
    "CallOptions",
    "GatewayError",
    "MaxPrice",
    "ProviderPrefs",
    "read_options",
    "strip_routing",
]
