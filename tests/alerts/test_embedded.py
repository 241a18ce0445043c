"""In embedded mode (no Redis, no broker, no worker) the gateway process runs the alerts loop
itself: a rule fires and its event reaches the receiver, tried on the loop's own thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from alerts.models import AlertKind, AlertRule, Delivery, DeliveryStatus, WebhookEndpoint
from tests.alerts.conftest import LOOPBACK, Receiver
from tests.billing.conftest import test_database_url
from tests.conftest import make_org
from tests.processes import Gateway, momor_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def embedded_gateway(tmp_path: Path) -> Iterator[Gateway]:
    env = momor_env(test_database_url(), None, MOMOR_ALERTS_INTERVAL_SECONDS="0.3",
                    MOMOR_OUTBOUND_ALLOW=LOOPBACK,
                    MOMOR_JOURNAL_DIR=str(tmp_path / "journal"))  # fmt: skip
    gateway = Gateway(env, tmp_path / "gateway.log")
    try:
        gateway.wait_ready(timeout=90)
        yield gateway
    finally:
        gateway.close()


@pytest.mark.timeout(180)
def test_the_gateway_runs_the_alerts_loop_in_embedded_mode(
    embedded_gateway: Gateway, receiver: Receiver
) -> None:
    org = make_org("solo", credits=Decimal(1))
    hook = WebhookEndpoint(organization=org, url=receiver.url)
    hook.set_secret("whsec_solo")
    hook.save()
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=2, email=False)

    receiver.wait_for(1, 60)
    deadline = time.monotonic() + 10  # the try is written once the answer is read
    while Delivery.objects.get(endpoint=hook).status != DeliveryStatus.DELIVERED:
        assert time.monotonic() < deadline, "the delivery was never marked delivered"
        time.sleep(0.05)

    (event,) = receiver.events()
    assert event["type"] == "balance.low"
    assert receiver.taken[0].signed_by("whsec_solo")
