"""A record is never lost to its encoding: whatever value reaches it (an integer past 64 bits,
a key that is not a string, a type orjson does not know, anywhere in the record), it is handed
off and stored. The fallback encoded a copy with its text made storable by the same encoder,
which refused it the same way, and the hand-off raised: no record, no charge."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import a_record

pytestmark = pytest.mark.django_db(transaction=True)


def test_values_orjson_refuses_reach_the_record_as_values_it_takes(world: World) -> None:
    routing = {"provider": {"order": ["openai"], "depth": 2**70, 7: Decimal("1.5")}}
    odd = a_record(world.org.pk, routing=routing, session_id="s\ud800")

    asyncio.run(record_call(odd))
    good = world.post({"model": "openai/gpt-5", "messages": HI})

    assert good.status_code == 200
    assert drain()
    generation = Generation.objects.get(request_id=odd.request_id)
    assert generation.routing == {"provider": {"order": ["openai"], "depth": 2**64 - 1, "7": "1.5"}}
    assert generation.session_id == "s\ufffd"
    assert generation.cost == Decimal("0.00225")
    assert LedgerEntry.objects.filter(idempotency_key=f"charge:{odd.request_id}").exists()
