"""The operators' admin, audited: every model registered on the site gets `AuditedAdmin`, so
each addition, change, deletion and action an operator makes leaves one row per object, and a
model registered later cannot be left out."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from audit.actors import Actor
from audit.trail import record_change
from audit.values import Values, values_of, values_stored

_BEFORE = "_audit_before"

Action = Callable[[Any, HttpRequest, QuerySet[Any]], Any]


class AuditedAdmin(admin.ModelAdmin[Any]):
    """Records through the admin's own log hooks, which it calls once per saved or deleted
    object; the values before are read when the object is saved."""

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            _befores(request)[_key(obj)] = values_of(obj)
        return obj

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            _befores(request)[_key(obj)] = values_stored(obj)
        super().save_model(request, obj, form, change)

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._record(request, "create", obj, message)
        return super().log_addition(request, obj, message)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._record(request, "update", obj, message)
        return super().log_change(request, obj, message)

    def log_deletions(self, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
        """Called once before a deletion, with every object it deletes."""
        for obj in queryset:
            record_change(_operator(request), "delete", obj, values_of(obj), {}, request)
        return super().log_deletions(request, queryset)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {
            name: (func if name == "delete_selected" else _audited_action(func, name), name, text)
            for name, action in super().get_actions(request).items()
            if action is not None
            for func, _, text in [action]
        }

    def _record(self, request: HttpRequest, action: str, obj: Any, message: Any) -> None:
        before = _befores(request).pop(_key(obj), {})
        record_change(
            _operator(request),
            action,
            obj,
            before,
            values_stored(obj),
            request,
            note=_summary(message),
        )


def _summary(message: Any) -> str:
    """The admin's own summary of a save, which names the inline rows it added, changed or
    deleted."""
    if isinstance(message, list):
        return LogEntry(change_message=json.dumps(message)).get_change_message()
    return str(message)


def _audited_action(func: Action, name: str) -> Action:
    """An admin action that records, for each selected object, its values before and after."""

    @wraps(func)
    def run(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
        objects = list(queryset)
        befores = [values_of(obj) for obj in objects]
        response = func(modeladmin, request, queryset)
        for obj, before in zip(objects, befores, strict=True):
            record_change(_operator(request), name, obj, before, values_stored(obj), request)
        return response

    return run


def _operator(request: HttpRequest) -> Actor:
    return Actor.operator(request.user)


def _befores(request: HttpRequest) -> dict[tuple[str, str], Values]:
    if not hasattr(request, _BEFORE):
        setattr(request, _BEFORE, {})
    befores: dict[tuple[str, str], Values] = getattr(request, _BEFORE)
    return befores


def _key(obj: models.Model) -> tuple[str, str]:
    return obj._meta.label_lower, str(obj.pk)


class AuditedAdminSite(admin.AdminSite):
    """Django's admin site, each registered ModelAdmin made an AuditedAdmin."""

    def register(
        self,
        model_or_iterable: Any,
        admin_class: type[admin.ModelAdmin[Any]] | None = None,
        **options: Any,
    ) -> None:
        base = admin_class or admin.ModelAdmin
        audited = type(base.__name__, (AuditedAdmin, base), {"__module__": base.__module__})
        super().register(model_or_iterable, audited, **options)
