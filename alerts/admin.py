"""Alerts in the operators' admin: what fired and how each delivery went, and the endpoints
(never their secrets); read only, as the organizations' owners and admins set them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from alerts.models import AlertEvent, Delivery, DeliveryAttempt, WebhookEndpoint


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DeliveryInline(ReadOnly, admin.TabularInline[Delivery, AlertEvent]):
    model = Delivery
    fields = readonly_fields = (
        "channel",
        "endpoint",
        "status",
        "attempts",
        "next_attempt_at",
        "finished_at",
    )
    extra = 0


@admin.register(AlertEvent)
class AlertEventAdmin(ReadOnly, admin.ModelAdmin[AlertEvent]):
    list_display = ["created_at", "organization", "type", "summary"]
    list_filter = ["type"]
    search_fields = ["organization__slug", "summary"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "organization",
        "rule",
        "type",
        "key",
        "summary",
        "data",
        "created_at",
    )
    inlines = [DeliveryInline]
    actions = None


class AttemptInline(ReadOnly, admin.TabularInline[DeliveryAttempt, Delivery]):
    model = DeliveryAttempt
    fields = readonly_fields = (
        "number",
        "at",
        "ok",
        "status_code",
        "error",
        "duration_ms",
        "answer",
    )
    extra = 0


@admin.register(Delivery)
class DeliveryAdmin(ReadOnly, admin.ModelAdmin[Delivery]):
    list_display = ["created_at", "event", "channel", "endpoint", "status", "attempts"]
    list_filter = ["status", "channel"]
    list_select_related = ["event", "endpoint"]
    fields = readonly_fields = (
        "event",
        "channel",
        "endpoint",
        "status",
        "attempts",
        "next_attempt_at",
        "finished_at",
    )
    inlines = [AttemptInline]
    actions = None


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnly, admin.ModelAdmin[WebhookEndpoint]):
    list_display = ["url", "organization", "created_at"]
    search_fields = ["url", "organization__slug"]
    fields = readonly_fields = (
        "organization",
        "url",
        "description",
        "created_at",
    )
    actions = None
