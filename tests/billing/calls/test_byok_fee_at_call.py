"""A call on the organization's own key pays the BYOK fee in force when it was made, whatever
the fee is when its record is stored (the worker read its own MOMOR_BYOK_FEE at storing, so a
fee changed between a call and its storing, or differing between gateways and workers,
changed the charge)."""

from __future__ import annotations

import threading
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from billing.admission.select import store
from billing.calls.cost import NANO
from billing.models import Generation, LedgerEntry
from billing.storing.stream_consumer import RecordsConsumer, stream_backlog
from tests.billing.conftest import HI, World
from tests.gateway.calls import save_key, settle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]


def test_the_fee_in_force_at_the_call_is_the_one_charged(world: World, settings: Any) -> None:
    settings.MOMOR_BYOK_FEE = "0.05"
    save_key(world.org, "openai", "sk-own-key-of-acme-0001")
    settle()
    response = world.post({"model": "openai/gpt-5", "messages": HI})
    assert response.status_code == 200, response.text
    shared = store().sync
    assert stream_backlog(shared) == 1  # no consumer has stored it: the workers are not running

    settings.MOMOR_BYOK_FEE = "0.5"
    consumer = RecordsConsumer(lambda: shared, f"fee-{threading.get_native_id()}")
    for _ in range(20):
        if stream_backlog(shared) == 0:
            break
        consumer.step(block_ms=None)

    usage = response.json()["usage"]
    upstream = Decimal(str(usage["cost_details"]["upstream_inference_cost"]))
    fee = (upstream * Decimal("0.05")).quantize(NANO, rounding=ROUND_HALF_UP)
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.attempts.get().key_source == "own"
    assert generation.cost == fee == Decimal(str(usage["cost"])) > 0
    charge = LedgerEntry.objects.get(idempotency_key=f"charge:{generation.request_id}")
    assert charge.amount == -fee
