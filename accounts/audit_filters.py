"""The audit page's filters (actor, action, object type, days) and the rows they select, and
the CSV export of those rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, cast

from django import forms
from django.db.models import QuerySet
from django.utils import timezone

from audit.models import AuditEvent
from core.formatting import spreadsheet_inert

DAYS = [(7, "7 days"), (30, "30 days"), (90, "90 days"), (365, "365 days")]
COLUMNS = [
    "at",
    "actor_kind",
    "actor",
    "action",
    "object_type",
    "object_id",
    "object",
    "changes",
    "note",
    "address",
    "user_agent",
]


class AuditFilterForm(forms.Form):
    actor = forms.CharField(
        required=False, max_length=200, widget=forms.TextInput(attrs={"placeholder": "Actor"})
    )
    action = forms.ChoiceField(required=False)
    object_type = forms.ChoiceField(required=False, label="Object")
    days = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, choices=[("", "Any time"), *DAYS]
    )

    def __init__(self, *args: Any, events: QuerySet[AuditEvent], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _menu(self, "action", "Any action", _seen(events, "action"))
        _menu(self, "object_type", "Any object", _seen(events, "object_type"))


def _menu(form: forms.Form, name: str, anything: str, values: list[str]) -> None:
    field = cast(forms.ChoiceField, form.fields[name])
    field.choices = [("", anything), *((value, value) for value in values)]


def _seen(events: QuerySet[AuditEvent], column: str) -> list[str]:
    return list(events.order_by(column).values_list(column, flat=True).distinct())


def organization_events(organization_id: int) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(organization_id=organization_id)


def filtered(events: QuerySet[AuditEvent], criteria: dict[str, Any]) -> QuerySet[AuditEvent]:
    if criteria.get("actor"):
        events = events.filter(actor__icontains=criteria["actor"])
    if criteria.get("action"):
        events = events.filter(action=criteria["action"])
    if criteria.get("object_type"):
        events = events.filter(object_type=criteria["object_type"])
    if criteria.get("days"):
        events = events.filter(at__gte=timezone.now() - timedelta(days=criteria["days"]))
    return events


def events_csv(events: QuerySet[AuditEvent]) -> Iterator[str]:
    """The rows as CSV, a header first, newest first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for event in events.iterator():
        writer.writerow(_row(event))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _row(event: AuditEvent) -> list[object]:
    return [
        spreadsheet_inert(value)
        for value in [
            event.at.isoformat(),
            event.actor_kind,
            event.actor,
            event.action,
            event.object_type,
            event.object_id,
            event.object_repr,
            json.dumps(event.changes, sort_keys=True),
            event.note,
            event.address or "",
            event.user_agent,
        ]
    ]
