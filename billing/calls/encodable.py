"""A value orjson always encodes: the last fallback of a record's encoding, so that no value in
a record (a count, a routing field, a tag) can cost the call its record. Strings are made
storable, integers past 64 bits are clamped to orjson's range, keys that are not strings and
values of any other type become their text, dataclasses become objects, and what nests
deeper than orjson writes becomes its text."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from billing.calls.storable import storable_text

SMALLEST, LARGEST = -(2**63), 2**64 - 1
"""orjson's integers: 64 bits, signed or unsigned."""
DEEPEST = 200
"""orjson writes 254 levels at most; past this, a value is written as its text."""
TEXT_CHARS = 1000


def encodable(value: Any, depth: int = 0) -> Any:
    if value is None or isinstance(value, bool | float | datetime):
        return value
    if isinstance(value, int):
        return min(max(value, SMALLEST), LARGEST)
    if isinstance(value, str):
        return storable_text(value)
    if depth >= DEEPEST:
        return _text(value)
    if isinstance(value, list | tuple):
        return [encodable(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {_key(key): encodable(item, depth + 1) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: encodable(getattr(value, f.name), depth + 1) for f in fields}
    return _text(value)


def _key(key: object) -> str:
    return storable_text(key) if isinstance(key, str) else _text(key)


def _text(value: object) -> str:
    try:
        text = str(value)
    except Exception:  # a str() that raises is a type's own fault: name the type instead
        text = type(value).__name__
    return storable_text(text[:TEXT_CHARS])
