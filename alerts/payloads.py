"""What an event says, the same to every endpoint and in every attempt: the webhook's JSON
body, and the e-mail's subject and text."""

from __future__ import annotations

import orjson

from alerts.models import AlertEvent


def body(event: AlertEvent) -> bytes:
    organization = event.organization
    return orjson.dumps(
        {
            "id": event.public_id,
            "type": event.type,
            "created": event.created_at.isoformat().replace("+00:00", "Z"),
            "organization": {
                "id": organization.pk,
                "slug": organization.slug,
                "name": organization.name,
            },
            "summary": event.summary,
            "data": event.data,
        }
    )


def mail_subject(event: AlertEvent) -> str:
    return f"[Momor] {event.organization.name}: {event.summary}"[:200]


def mail_text(event: AlertEvent) -> str:
    details = "\n".join(f"  {name}: {value}" for name, value in _flat(event.data))
    return (
        f"{event.summary}.\n\n"
        f"Organization: {event.organization.name} ({event.organization.slug})\n"
        f"Alert: {event.type} ({event.public_id}), "
        f"{event.created_at.isoformat().replace('+00:00', 'Z')}\n\n"
        f"{details}\n\n"
        "Owners and admins set their organization's alerts on its Alerts page.\n"
    )


def _flat(data: dict[str, object], prefix: str = "") -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for name, value in data.items():
        if isinstance(value, dict):
            rows += _flat(value, f"{prefix}{name}.")
        else:
            rows.append((f"{prefix}{name}", value))
    return rows
