"""One change to Momor's state: its actor, action, object, changed values, origin and time.

Rows hold ids and labels, never foreign keys: a deleted organization, user or key leaves its
changes readable, and no cascade ever writes to the table (which refuses UPDATE and DELETE on
PostgreSQL: migrations/0002_append_only.py)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ActorKind(models.TextChoices):
    USER = "user", "Member (UI or API session)"
    KEY = "key", "Management key"
    OPERATOR = "operator", "Operator (admin)"
    COMMAND = "command", "Command"


class AuditEvent(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    organization_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    actor_kind = models.CharField(max_length=10, choices=ActorKind.choices)
    actor_user_id = models.BigIntegerField(null=True, blank=True)
    actor_key_id = models.BigIntegerField(null=True, blank=True)
    actor = models.CharField(max_length=200, help_text="Username, key prefix or command.")
    action = models.CharField(max_length=50)
    object_type = models.CharField(max_length=100, help_text="app_label.model")
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    changes = models.JSONField(
        default=dict,
        help_text='{field: [before, after]}; a secret field reads "changed", never its value.',
    )
    note = models.TextField(blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["organization_id", "-at"], name="audit_org_at")]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.object_type} {self.object_repr}"
