"""The audit trail's retention: rows older than MOMOR_AUDIT_RETENTION_DAYS are deleted, the
only deletion the table's trigger lets through (audit/migrations/0002_append_only.py)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent


def audit_purge(retention_days: int | None = None) -> int:
    """Delete the rows older than the retention; the number deleted."""
    days = settings.MOMOR_AUDIT_RETENTION_DAYS if retention_days is None else retention_days
    before = timezone.now() - timedelta(days=max(days, 1))
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT set_config('momor.audit_purge_before', %s, true)", [before.isoformat()]
                )
        deleted, _ = AuditEvent.objects.filter(at__lt=before).delete()
    return deleted
