"""How long alerts are kept: events, and deliveries with their tries, older than
MOMOR_ALERTS_RETENTION_DAYS (at least 32, longer than any budget's window) are deleted once a
day by the alerts loop, but a delivery still being tried, and the event of a `total` budget's
threshold (its window is all time: deleting it would fire it again)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from alerts.models import AlertEvent, Delivery, DeliveryStatus

ALL_TIME = ":all"
"""How the key of a `total` budget's event ends (alerts/firing.py, alerts/conditions.py)."""


def purge(now: datetime) -> int:
    """Delete what is past the retention; how many events and deliveries went."""
    before = now - timedelta(days=settings.MOMOR_ALERTS_RETENTION_DAYS)
    old = Delivery.objects.filter(created_at__lt=before).exclude(status=DeliveryStatus.PENDING)
    deliveries, _ = old.delete()
    events = AlertEvent.objects.filter(created_at__lt=before).exclude(key__endswith=ALL_TIME)
    events = events.exclude(deliveries__status=DeliveryStatus.PENDING)
    gone, _ = events.delete()
    return deliveries + gone
