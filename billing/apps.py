from __future__ import annotations

from django.apps import AppConfig

from accounts.hooks import register_key_spend


class BillingConfig(AppConfig):
    name = "billing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django requires of modules that query them.
        from billing.usage import with_spend

        register_key_spend(with_spend)
