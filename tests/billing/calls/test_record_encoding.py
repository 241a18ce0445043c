"""A record is never lost to its encoding: whatever value reaches it (an integer past 64 bits,
a key that is not a string, a type orjson does not know, anywhere in the record), it is handed
off and stored. The fallback encoded a copy with its text made storable by the same encoder,
which refused it the same way, and the hand-off raised: no record, no charge."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import orjson
import pytest

from billing.calls.records import APIS, record_from_payload, record_payload
from billing.models import API_CHARS, Generation, GenerationApi, LedgerEntry
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


def test_a_record_keeps_its_api_and_one_written_before_it_was_kept_reads_as_chat() -> None:
    embedded = a_record(1, api="embeddings")
    assert record_from_payload(orjson.loads(record_payload(embedded))).api == "embeddings"
    assert a_record(1).api == "chat"  # what a record is unless the route says otherwise

    older = orjson.loads(record_payload(a_record(1)))
    del older["api"]  # a payload a process wrote before the API was kept
    assert record_from_payload(older).api == "chat"

    odd = {**older, "api": ["embeddings"]}
    with pytest.raises(TypeError):  # parked alone, never failing its batch
        record_from_payload(odd)


def test_the_apis_a_record_names_are_the_ones_a_generation_takes() -> None:
    assert APIS == ("chat", "messages", "responses", "embeddings")
    assert tuple(GenerationApi.values) == APIS
    assert max(map(len, APIS)) <= API_CHARS
