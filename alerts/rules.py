"""Every organization starts with the default rules: 50 %, 80 % and 100 % of any budget."""

from __future__ import annotations

from typing import Any

from accounts.models import Organization
from alerts.models import DEFAULT_BUDGET_SHARES, AlertKind, AlertRule


def default_rules(organization_id: int) -> list[AlertRule]:
    return [
        AlertRule(organization_id=organization_id, kind=AlertKind.BUDGET, threshold=share)
        for share in DEFAULT_BUDGET_SHARES
    ]


def default_rules_on_creation(
    sender: type[Organization], instance: Organization, created: bool, raw: bool = False,
    **kwargs: Any,
) -> None:  # fmt: skip
    if created and not raw:
        AlertRule.objects.bulk_create(default_rules(instance.pk), ignore_conflicts=True)
