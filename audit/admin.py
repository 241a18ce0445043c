"""The audit trail in the operators' admin: read, filtered and searched, never changed."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    list_display = ["at", "actor_kind", "actor", "action", "object_type", "object_repr", "address"]
    list_filter = ["actor_kind", "action", "object_type"]
    search_fields = ["actor", "object_repr", "object_id"]
    date_hierarchy = "at"
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
