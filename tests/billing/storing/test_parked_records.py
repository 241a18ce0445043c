"""A parked record (a dead letter) is billed and counted as a stored call is: its charge, which
names its key, and its usage in the daily rollups the usage pages and its key's spend read. And
a record the database refuses in a way that would fail its letter too never holds back its
batch: the letter is parked without what the database refused."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest
from django.utils import timezone

from accounts.models import ApiKey
from billing.calls.records import TokenCounts, record_payload
from billing.models import DailyRollup, DeadLetter, Generation, LedgerEntry
from billing.recording.hand_off import drain, record_call
from billing.storing.store import records_store
from billing.usage.reads import with_spend
from tests.billing.conftest import HI, World
from tests.billing.records import PRICES, a_record

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_parked_calls_usage_reaches_the_rollups_and_its_keys_spend(world: World) -> None:
    key = ApiKey.objects.get(organization=world.org)
    tokens = TokenCounts(prompt=3_000_000_000, completion=5)  # past the records' integers
    bad = a_record(world.org.pk, tokens=tokens, api_key_id=key.pk, model="bulky/model")
    cheap = {**PRICES, "prompt": "0.001"}  # USD per million: $0.003 for the prompt
    bad.attempts[0] = dataclasses.replace(bad.attempts[0], tokens=tokens, prices=cheap)

    asyncio.run(record_call(bad))
    asyncio.run(record_call(bad))  # delivered twice: counted once
    assert drain()

    assert DeadLetter.objects.get(request_id=bad.request_id).charge_posted
    charge = LedgerEntry.objects.get(idempotency_key=f"charge:{bad.request_id}")
    assert (charge.amount, charge.api_key_id) == (Decimal("-3.00005"), key.pk)
    rollup = DailyRollup.objects.get(organization=world.org, model="bulky/model")
    assert (rollup.day, rollup.api_key_id) == (timezone.localtime().date(), key.pk)
    assert (rollup.calls, rollup.prompt_tokens, rollup.cost) == (
        1,
        3_000_000_000,
        Decimal("3.00005"),
    )
    assert with_spend(ApiKey.objects.filter(pk=key.pk)).get().spend == Decimal("3.00005")


def test_a_record_whose_letter_the_database_refuses_is_parked_and_its_batch_stored(
    world: World,
) -> None:
    bad = a_record(2**63)  # no organization has it, and no bigint holds it

    asyncio.run(record_call(bad))
    good = world.post({"model": "openai/gpt-5", "messages": HI})

    assert good.status_code == 200
    assert drain()
    assert Generation.objects.filter(request_id=good.headers["x-momor-request-id"]).exists()
    letter = DeadLetter.objects.get(request_id=bad.request_id)
    assert (letter.organization_id, letter.cost, letter.charge_posted) == (None, None, False)
    assert letter.error.startswith("LookupError: organization")


def test_a_record_whose_moment_names_no_offset_is_stored_as_utc_with_its_batch(
    world: World,
) -> None:
    naive = a_record(world.org.pk, created_at=datetime(2024, 5, 1, 12, 0))  # noqa: DTZ001 - the naive moment is what this test sends

    asyncio.run(record_call(naive))
    good = world.post({"model": "openai/gpt-5", "messages": HI})

    assert good.status_code == 200
    assert drain()
    assert Generation.objects.filter(request_id=good.headers["x-momor-request-id"]).exists()
    stored = Generation.objects.get(request_id=naive.request_id)
    assert stored.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_a_payload_whose_ids_are_of_another_kind_is_parked_alone(world: World) -> None:
    good = a_record(world.org.pk)
    odd_org = orjson.loads(record_payload(a_record(world.org.pk)))
    odd_org["organization_id"] = [world.org.pk]
    odd_request = orjson.loads(record_payload(a_record(world.org.pk)))
    odd_request["request_id"] = ["not", "text"]

    records_store([orjson.dumps(odd_org), orjson.dumps(odd_request), record_payload(good)])

    assert Generation.objects.filter(request_id=good.request_id).exists()
    assert (
        list(DeadLetter.objects.values_list("request_id", "error"))
        == [
            (
                "",
                "TypeError: a record's request id is text and its organization, key and user ids "
                "integers",
            )
        ]
        * 2
    )
