"""The one place that writes the audit trail: `record_change`, `audited`, which records the
change a block makes to one object once the block has made it, and `record_run`, for a
command that changes many rows at once.

    with audited(actor, "revoke", key, request=request):
        key.revoke()

The change is recorded in the block's transaction: a block that raises records nothing and
changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.http import HttpRequest

from audit.actors import Actor
from audit.models import AuditEvent
from audit.values import Values, changes_between, values_stored

USER_AGENT_LONGEST = 300


def record_change(
    actor: Actor,
    action: str,
    obj: models.Model,
    before: Values,
    after: Values,
    request: HttpRequest | None = None,
    *,
    note: str = "",
) -> AuditEvent:
    """Write one row: `actor` did `action` to `obj`, whose values went from `before` to
    `after` (values_of, values_stored); `request` says from where."""
    return AuditEvent.objects.create(
        organization_id=organization_of(obj),
        actor_kind=actor.kind,
        actor_user_id=actor.user_id,
        actor_key_id=actor.key_id,
        actor=actor.label[:200],
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk if obj.pk is not None else before.get("id", "")),
        object_repr=str(obj)[:200],
        changes=changes_between(before, after),
        note=note,
        **_origin(request),
    )


def record_run(actor: Actor, action: str, object_type: str, *, note: str) -> AuditEvent:
    """Write one row for a run that changed many rows of `object_type` (a catalog loaded,
    every stored secret re-encrypted): `note` says what it did."""
    return AuditEvent.objects.create(
        actor_kind=actor.kind,
        actor_user_id=actor.user_id,
        actor_key_id=actor.key_id,
        actor=actor.label[:200],
        action=action,
        object_type=object_type,
        note=note,
    )


def organization_of(obj: models.Model) -> int | None:
    """The organization a changed object belongs to: itself, or its `organization`."""
    if obj._meta.label_lower == "accounts.organization":
        return int(obj.pk) if obj.pk is not None else None
    organization_id = getattr(obj, "organization_id", None)
    return int(organization_id) if organization_id is not None else None


def _origin(request: HttpRequest | None) -> dict[str, Any]:
    if request is None:
        return {"address": None, "user_agent": ""}
    return {
        "address": request.META.get("REMOTE_ADDR") or None,
        "user_agent": request.headers.get("user-agent", "")[:USER_AGENT_LONGEST],
    }


@dataclass
class Change:
    """What `audited` yields: the block names the object it made by setting `obj`, and the
    actor it made by setting `actor` (someone new, whose account the block creates)."""

    actor: Actor
    obj: models.Model | None
    before: Values
    note: str = ""


@contextmanager
def audited(
    actor: Actor,
    action: str,
    obj: models.Model | None = None,
    *,
    request: HttpRequest | None = None,
) -> Iterator[Change]:
    """Record the change the block makes to `obj` (or to the object it sets on the Change
    it is given, for one it creates), from its stored values before to those after."""
    change = Change(actor, obj, values_stored(obj))
    with transaction.atomic():
        yield change
        if change.obj is None:
            raise ValueError(f"{action}: the audited block named no object")
        after = values_stored(change.obj)
        record_change(
            change.actor, action, change.obj, change.before, after, request, note=change.note
        )
