"""A record whose cost is past what the ledger's money column holds is parked, without a
charge, and never holds back its batch (it failed the batch, and every retry of it, with
PostgreSQL's numeric field overflow while parking it)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from billing.calls.records import TokenCounts
from billing.models import DeadLetter, Generation
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import PRICES, a_record

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cost_past_the_money_column_is_parked_and_the_batch_stored(world: World) -> None:
    tokens = TokenCounts(prompt=2_000_000_000, completion=5)
    # a model of its own: the process's cost counter for it absorbs the 2e11 USD, and a float
    # that large no longer resolves the cost of one call (the metrics tests read gpt-5's)
    bad = a_record(world.org.pk, tokens=tokens, model="dear/model")
    dear = {**PRICES, "prompt": "99999999"}  # USD per million: 2e11 USD in all
    bad.attempts[0] = dataclasses.replace(
        bad.attempts[0], tokens=tokens, prices=dear, model="dear/model"
    )

    asyncio.run(record_call(bad))
    good = world.post({"model": "openai/gpt-5", "messages": HI})

    assert good.status_code == 200
    assert drain()
    assert Generation.objects.filter(request_id=good.headers["x-momor-request-id"]).exists()
    letter = DeadLetter.objects.get(request_id=bad.request_id)
    assert (letter.cost, letter.charge_posted) == (None, False)
    assert letter.error.startswith("DataError: numeric field overflow")
    world.org.refresh_from_db()
    assert world.org.balance < 100
