"""`manage.py check_alerts` checks every rule once and tries what is due in its own process:
the event reaches the receiver, and a second run fires nothing again."""

from __future__ import annotations

from decimal import Decimal

import pytest

from alerts.models import AlertKind, AlertRule, Delivery, DeliveryStatus, WebhookEndpoint
from tests.alerts.conftest import LOOPBACK, Receiver
from tests.child_process import manage
from tests.conftest import make_org

pytestmark = pytest.mark.django_db(transaction=True)


def test_check_alerts_fires_and_delivers_once(receiver: Receiver) -> None:
    org = make_org("cron", credits=Decimal(1))
    hook = WebhookEndpoint(organization=org, url=receiver.url)
    hook.set_secret("whsec_cron")
    hook.save()
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=5, email=False)

    first = manage("check_alerts", MOMOR_OUTBOUND_ALLOW=LOOPBACK)
    second = manage("check_alerts", MOMOR_OUTBOUND_ALLOW=LOOPBACK)

    assert first.returncode == 0, first.stderr
    assert "alert fired: balance.low" in first.stderr  # the log, as the worker's loop logs it
    assert first.stdout == "1 alert(s) fired, 1 delivery try(-ies) made\n"
    assert second.stdout == "0 alert(s) fired, 0 delivery try(-ies) made\n"
    assert [e["type"] for e in receiver.events()] == ["balance.low"]
    assert receiver.taken[0].signed_by("whsec_cron")
    assert Delivery.objects.get(endpoint=hook).status == DeliveryStatus.DELIVERED
