"""Text made storable: PostgreSQL refuses NUL in text and jsonb, and no encoder takes a lone
surrogate (a half of a UTF-16 pair, which Python strings can hold). Both become U+FFFD, and
a surrogate pair split into two code points is joined again."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

REPLACEMENT = "\ufffd"
T = TypeVar("T")


def storable_text(value: str) -> str:
    if value.isascii():
        return value.replace("\x00", REPLACEMENT) if "\x00" in value else value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value.replace("\x00", REPLACEMENT)


def storable(value: T) -> T:
    """`value` with every string in it made storable: strings, lists, dicts (keys too) and
    dataclasses (a copy; `value` itself is left as it is)."""
    return cast(T, _clean(value))  # _clean keeps each value's type


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _clean(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value
