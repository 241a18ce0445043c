"""The operators' admin reads budgets, alert events, deliveries with their tries and webhook
endpoints (never an endpoint's secret), and changes none of them: organizations set them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from accounts.models import Budget, BudgetPeriod, BudgetScope
from alerts.firing import deliveries_for
from alerts.models import AlertEvent, DeliveryAttempt, WebhookEndpoint
from tests.conftest import make_org

pytestmark = pytest.mark.django_db

SECRET = "whsec_never-in-the-admin"


def test_the_admin_reads_budgets_and_alerts_and_changes_none(admin_client: Client) -> None:
    org = make_org("watched")
    budget = Budget.objects.create(organization=org, scope=BudgetScope.ORGANIZATION,
                                   period=BudgetPeriod.MONTHLY, amount=Decimal(42))  # fmt: skip
    hook = WebhookEndpoint(organization=org, url="https://hooks.example/watched")
    hook.set_secret(SECRET)
    hook.save()
    event = AlertEvent.objects.create(organization=org, type="test", key="", summary="A test")
    (delivery,) = deliveries_for(event, email=False)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, status_code=500, answer="oops")
    pages = {
        "/admin/accounts/budget/": "42",
        f"/admin/accounts/budget/{budget.pk}/change/": "42",
        "/admin/alerts/alertevent/": "A test",
        f"/admin/alerts/alertevent/{event.pk}/change/": "hooks.example/watched",
        "/admin/alerts/delivery/": "Pending",
        f"/admin/alerts/delivery/{delivery.pk}/change/": "oops",
        "/admin/alerts/webhookendpoint/": "hooks.example/watched",
        f"/admin/alerts/webhookendpoint/{hook.pk}/change/": "hooks.example/watched",
    }
    for path, shown in pages.items():
        answer = admin_client.get(path)
        assert answer.status_code == 200, path
        assert shown in answer.content.decode(), path
        assert (
            SECRET not in answer.content.decode()
            and hook.secret_encrypted not in answer.content.decode()
        )
    for path in ["/admin/accounts/budget/add/", "/admin/alerts/webhookendpoint/add/",
                 f"/admin/accounts/budget/{budget.pk}/delete/"]:  # fmt: skip
        assert admin_client.get(path).status_code == 403, path
    changed = admin_client.post(f"/admin/accounts/budget/{budget.pk}/change/", {"amount": "1"})
    assert changed.status_code == 403
    budget.refresh_from_db()
    assert budget.amount == 42
