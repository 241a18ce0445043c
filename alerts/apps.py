from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_save


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.models import Organization
        from alerts.rules import default_rules_on_creation

        post_save.connect(default_rules_on_creation, sender=Organization, dispatch_uid="alerts")
