"""Recording through a real Celery worker on Redis and PostgreSQL: every call and attempt
arrives, the ledger balances, a task delivered twice bills once, and with the broker
unreachable calls still succeed and their records are stored directly."""

from __future__ import annotations

import logging
import socket
import subprocess
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson
import pytest
from django.db.models import Sum

from billing.admission import store
from billing.calls.records import AttemptRecord, CallRecord, TokenCounts
from billing.ledger.posting import ledger_sum
from billing.models import Attempt, EntryKind, Generation, LedgerEntry
from billing.recording.hand_off import drain
from billing.storing.tasks import record_generations
from tests.billing.conftest import HI, World

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def wait_for_generations(request_ids: list[str], timeout: float = 20.0) -> list[Generation]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(Generation.objects.filter(request_id__in=request_ids))
        if len(found) == len(request_ids):
            return found
        time.sleep(0.05)
    missing = set(request_ids) - set(
        Generation.objects.filter(request_id__in=request_ids).values_list("request_id", flat=True)
    )
    raise AssertionError(f"never recorded: {sorted(missing)}")


def assert_ledger_balances(world: World, initial: Decimal) -> Decimal:
    """The balance is the initial credit minus every generation's cost, and the ledger's sum."""
    world.org.refresh_from_db()
    spent = Generation.objects.filter(organization=world.org).aggregate(s=Sum("cost"))["s"]
    assert world.org.balance == initial - (spent or Decimal(0))
    assert world.org.balance == ledger_sum(world.org.pk)
    return world.org.balance


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_calls_are_recorded_by_the_worker_with_their_attempts_and_the_ledger_balances(
    world: World, celery_worker: subprocess.Popen[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    world.fake.script("gpt-5", fail={"status": 500})
    world.fake.script(
        "gpt-5-azure-eu", text="Paris.", usage={"prompt_tokens": 1000, "completion_tokens": 100}
    )
    world.fake.script(
        "gpt-5-mini", text="Lyon.", usage={"prompt_tokens": 200, "completion_tokens": 50}
    )
    caplog.set_level(logging.WARNING, logger="billing.recording.hand_off")

    failover = world.post({"model": "openai/gpt-5", "messages": HI})
    plain = world.post({"model": "openai/gpt-5-mini", "messages": HI})
    streamed = world.stream(
        {"model": "openai/gpt-5-mini", "messages": HI, "stream_options": {"include_usage": True}}
    )
    responses = [failover, plain, streamed]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert drain()
    ids = [r.headers["x-momor-request-id"] for r in responses]
    by_id = {g.request_id: g for g in wait_for_generations(ids)}

    assert by_id[ids[0]].cost == Decimal("0.002300000")  # 1000 x 1.30 + 100 x 10 per million
    assert by_id[ids[1]].cost == Decimal("0.000150000")  # 200 x 0.25 + 50 x 2 per million
    assert by_id[ids[2]].cost == Decimal("0.000150000")
    assert [g.streamed for g in (by_id[i] for i in ids)] == [False, False, True]
    attempts = Attempt.objects.filter(generation=by_id[ids[0]])
    assert [(a.provider, a.region, a.http_status, a.cost) for a in attempts] == [
        ("openai", "", 500, Decimal(0)),
        ("azure", "eu", 200, Decimal("0.002300000")),
    ]
    charges = LedgerEntry.objects.filter(organization=world.org, kind=EntryKind.CHARGE)
    assert sorted(c.amount for c in charges) == [
        Decimal("-0.002300000"),
        Decimal("-0.000150000"),
        Decimal("-0.000150000"),
    ]
    assert assert_ledger_balances(world, Decimal(100)) == Decimal("99.997400000")
    assert "directly" not in caplog.text  # the worker stored them, not the fallback
    assert store().open_reservations(world.org.pk, int(time.time() * 1000)) == {}
    assert wait_for_unposted_empty(world.org.pk) == {}


def wait_for_unposted_empty(org_id: int, timeout: float = 5.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while (held := store().unposted(org_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return held


def a_call_record(world: World) -> CallRecord:
    prices = {"prompt": "1.25", "completion": "10", "cache_read": "0", "cache_write": "0"}
    tokens = TokenCounts(prompt=1000, completion=100)
    attempt = AttemptRecord(
        position=0,
        model="openai/gpt-5",
        provider="openai",
        region="",
        upstream_id="gpt-5",
        key_source="momor",
        prices=prices,
        http_status=200,
        latency_ms=12,
        tokens=tokens,
    )
    return CallRecord(
        request_id=uuid.uuid4().hex,
        organization_id=world.org.pk,
        api_key_id=None,
        user_id=None,
        selectors=["openai/gpt-5"],
        streamed=False,
        created_at=datetime.now(tz=UTC),
        status="success",
        model="openai/gpt-5",
        provider="openai",
        finish_reason="stop",
        tokens=tokens,
        latency_ms=12,
        attempts=[attempt],
    )


def test_a_task_delivered_twice_bills_once(
    world: World, celery_worker: subprocess.Popen[bytes]
) -> None:
    payload: dict[str, Any] = orjson.loads(orjson.dumps(a_call_record(world)))
    record_generations.delay([payload])
    wait_for_generations([payload["request_id"]])
    record_generations.apply(args=[[payload]]).get()  # the same task, delivered again here
    record_generations.delay([payload])  # and once more through the worker
    time.sleep(1.0)

    generation = Generation.objects.get(request_id=payload["request_id"])
    assert generation.cost == Decimal("0.002250000")
    assert generation.attempts.count() == 1
    charges = LedgerEntry.objects.filter(generation=generation)
    assert [c.amount for c in charges] == [Decimal("-0.002250000")]
    assert assert_ledger_balances(world, Decimal(100)) == Decimal("99.997750000")
