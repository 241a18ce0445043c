"""One bad record never holds back another: text PostgreSQL refuses is made storable, a record
the database still refuses is parked as a dead letter with its charge posted, and the other
records of its batch are stored all the same, over real HTTP, on PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.test import Client

from accounts.models import ApiKey
from billing.calls.records import TokenCounts
from billing.ledger.posting import ledger_sum
from billing.models import DeadLetter, Generation, LedgerEntry
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import a_record
from tests.conftest import make_key

pytestmark = pytest.mark.django_db(transaction=True)

NUL_MODEL = "openai/gpt-5\x00"


def wait_stored(request_ids: list[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stored = Generation.objects.filter(request_id__in=request_ids).count()
        parked = DeadLetter.objects.filter(request_id__in=request_ids).count()
        if stored + parked == len(request_ids):
            return
        time.sleep(0.05)
    raise AssertionError("some records were never stored")


def assert_balanced(world: World) -> None:
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)


@pytest.mark.celery
def test_a_model_holding_nul_never_holds_back_the_other_calls(
    world: World, celery_worker: subprocess.Popen[bytes]
) -> None:
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": 10, "completion_tokens": 5})
    bodies = [{"model": "openai/gpt-5-mini", "messages": HI} for _ in range(20)]
    bodies.insert(7, {"model": NUL_MODEL, "messages": HI})

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(world.post, bodies))

    statuses = [r.status_code for r in responses]
    assert statuses == [200] * 7 + [404] + [200] * 13
    ids = [r.headers["x-momor-request-id"] for r in responses]
    wait_stored(ids)
    assert Generation.objects.filter(request_id__in=ids).count() == 21  # none parked
    refused = Generation.objects.get(request_id=ids[7])
    assert refused.status == "refused"
    assert refused.selectors == ["openai/gpt-5\ufffd"]
    assert "\x00" not in refused.error and "openai/gpt-5\ufffd" in refused.error
    charges = LedgerEntry.objects.filter(organization=world.org, kind="charge")
    assert charges.count() == 20
    assert_balanced(world)


def test_a_record_the_database_refuses_is_parked_with_its_charge_posted(
    world: World, admin_client: Client
) -> None:
    """More prompt tokens than a PostgreSQL integer holds: the generation row cannot be
    written. The gateway reads no provider's count past that column (gateway/providers'
    token_count), so the record is handed off directly, through Redis, the records stream and
    its consumer, as one written by an earlier version would be."""
    world.fake.script("gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10})
    world.org.refresh_from_db()
    before = world.org.balance
    tokens = TokenCounts(prompt=3_000_000_000, completion=5)
    bad = a_record(world.org.pk, tokens=tokens)
    bad.attempts[0].tokens = tokens

    good = world.post({"model": "openai/gpt-5", "messages": HI})
    asyncio.run(record_call(bad))

    assert good.status_code == 200
    bad_id, good_id = bad.request_id, good.headers["x-momor-request-id"]
    assert drain()
    assert Generation.objects.filter(request_id=good_id).exists()
    letter = DeadLetter.objects.get(request_id=bad_id)
    assert letter.organization_id == world.org.pk
    assert letter.cost == Decimal("3750.000050000")  # 3e9 x 1.25 + 5 x 10 per million
    assert letter.charge_posted is True
    assert letter.error == "DataError: integer out of range"
    assert f'"request_id":"{bad_id}"' in letter.payload
    charge = LedgerEntry.objects.get(idempotency_key=f"charge:{bad_id}")
    assert charge.amount == -letter.cost
    good_cost = Generation.objects.get(request_id=good_id).cost
    assert_balanced(world)
    assert world.org.balance == before - letter.cost - good_cost
    listed = admin_client.get("/admin/billing/deadletter/")
    assert listed.status_code == 200 and bad_id in listed.content.decode()
    assert admin_client.get("/admin/billing/deadletter/add/").status_code == 403


def test_a_call_whose_key_was_deleted_meanwhile_is_stored_without_it(world: World) -> None:
    key, row = make_key(world.org, name="short-lived")
    world.fake.script(
        "gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10}, delay_first_byte=1.0
    )

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(world.post, {"model": "openai/gpt-5", "messages": HI}, key=key)
        time.sleep(0.5)
        ApiKey.objects.filter(pk=row.pk).delete()
        response = pending.result()

    assert response.status_code == 200, response.text
    assert drain()
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.api_key_id is None
    assert generation.cost == Decimal("0.000225000")
    assert LedgerEntry.objects.filter(idempotency_key=f"charge:{generation.request_id}").exists()
    assert DeadLetter.objects.count() == 0
    assert_balanced(world)


def test_lone_surrogates_are_replaced_and_a_split_pair_joined(world: World) -> None:
    """No JSON Momor parses can carry a lone surrogate (orjson refuses them), so the record is
    handed off directly: through Redis, the records stream and its consumer, as a call's is."""
    record = a_record(
        world.org.pk,
        attempt_error="half a pair \ud800 here",
        selectors=["openai/gpt-5", "a \udfff b"],
        native_finish_reason="\ud83d\ude00 \ud800",
    )

    asyncio.run(record_call(record))

    assert drain()
    generation = Generation.objects.get(request_id=record.request_id)
    assert generation.selectors == ["openai/gpt-5", "a \ufffd b"]
    assert generation.native_finish_reason == "\U0001f600 \ufffd"
    assert generation.attempts.get().error == "half a pair \ufffd here"
    assert generation.cost == Decimal("0.002250000")


def test_the_dead_letters_are_listed_read_only(admin_client: Client, world: World) -> None:
    letter = DeadLetter.objects.create(
        request_id="r1", organization_id=world.org.pk, payload="{}", error="DataError: x"
    )
    page = admin_client.get(f"/admin/billing/deadletter/{letter.pk}/change/")
    assert page.status_code == 200
    assert b"DataError: x" in page.content
    assert b'name="_save"' not in page.content
