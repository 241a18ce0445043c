"""The refresher's reconcile: a settled charge whose announcement never came is cleared once
the ledger holds it, reading only the oldest unposted charges however many wait."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from billing.admission import store
from billing.admission.base import AdmitRequest
from billing.calls.cost import to_units
from billing.ledger.admission_sync import RECONCILE_BATCH, admission_sync
from billing.ledger.posting import ledger_post
from billing.models import EntryKind
from tests.conftest import make_org

NOW = 1_790_000_000_000


def settled(org_id: int, request_id: str, cost: Decimal, at: int) -> None:
    ticket = asyncio.run(
        store().admit(AdmitRequest(request_id, org_id, "k1", to_units(cost), 0, at, 60_000))
    )
    store().settle(ticket, to_units(cost), request_id, at)


@pytest.mark.django_db
def test_a_charge_in_the_ledger_whose_announcement_was_lost_is_cleared() -> None:
    org = make_org("acme", credits=Decimal(10))
    admission_sync([org.pk], reconcile=False)
    settled(org.pk, "lost", Decimal(1), NOW)
    settled(org.pk, "waiting", Decimal(2), NOW + 1)
    # Inside the test's transaction the on-commit announcement never runs: it is lost.
    ledger_post(
        organization_id=org.pk, kind=EntryKind.CHARGE, amount=Decimal(-1),
        idempotency_key="charge:lost",
    )  # fmt: skip

    admission_sync([org.pk], reconcile=True)

    assert store().unposted(org.pk) == {"waiting": to_units(Decimal(2))}
    available = asyncio.run(
        store().admit(AdmitRequest("next", org.pk, "k1", to_units(Decimal(7)), 0, NOW, 1))
    )
    assert available.amount == to_units(Decimal(7))  # 10 - 1 posted - 2 unposted


@pytest.mark.django_db
def test_only_the_oldest_unposted_charges_are_read() -> None:
    org = make_org("acme", credits=Decimal(1000))
    admission_sync([org.pk], reconcile=False)
    for i in range(RECONCILE_BATCH + 5):
        settled(org.pk, f"call-{i}", Decimal("0.01"), NOW + i)
    oldest = store().oldest_unposted(org.pk, RECONCILE_BATCH)
    assert oldest == [f"call-{i}" for i in range(RECONCILE_BATCH)]
