from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate

from accounts.hooks import register_budget_spent, register_key_limits, register_key_spend


class BillingConfig(AppConfig):
    name = "billing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django requires of modules that query them.
        from billing.ledger.budget_spend import spent_now_many
        from billing.ledger.key_limits import openrouter_fields
        from billing.usage.reads import with_spend

        register_key_spend(with_spend)
        register_key_limits(openrouter_fields)
        register_budget_spent(spent_now_many)
        post_migrate.connect(_partitions_ensure, sender=self)


def _partitions_ensure(using: str, **kwargs: Any) -> None:
    """The coming months' partitions of the call records exist once migrations have run."""
    from django.db import connections

    from billing.retention.partitions import partitions_ensure

    db = connections[using]
    if "billing_generation" in db.introspection.table_names():
        partitions_ensure(db=db)
