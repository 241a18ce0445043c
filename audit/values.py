"""A model object's values as the audit trail keeps them, and what changed between two.

Every concrete field is read but the ones saved on every write (`auto_now`); a secret field
(a hashed key, an encrypted provider key, a password, a token) is compared, never kept: its
change reads "changed"."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.db import models

SECRET_WORDS = frozenset({"secret", "password", "token", "hash", "encrypted", "credential"})
CHANGED = "changed"

Values = dict[str, Any]


def is_secret(name: str) -> bool:
    """A field named with a secret's word: `key_hash`, `secret_encrypted`, `password`
    (`max_output_tokens` is none)."""
    return not SECRET_WORDS.isdisjoint(name.split("_"))


def values_of(obj: models.Model | None) -> Values:
    """The object's field values by column name (`organization_id`), or {} for none."""
    if obj is None:
        return {}
    return {
        field.attname: field.value_from_object(obj)
        for field in obj._meta.concrete_fields
        if not getattr(field, "auto_now", False)
    }


def values_stored(obj: models.Model | None) -> Values:
    """The values of the object's row as the database holds them now ({} once deleted)."""
    if obj is None or obj.pk is None:
        return {}
    stored = obj._meta.model._base_manager.filter(pk=obj.pk).first()
    return values_of(stored)


def changes_between(before: Values, after: Values) -> dict[str, Any]:
    """{field: [before, after]} for each field that differs, secrets as "changed"."""
    changes: dict[str, Any] = {}
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        changes[name] = CHANGED if is_secret(name) else [_plain(old), _plain(new)]
    return changes


def _plain(value: Any) -> Any:
    """A value JSON holds as it reads: numbers and moments as text."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID | timedelta):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value
