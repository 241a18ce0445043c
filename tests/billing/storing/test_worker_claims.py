"""A worker killed while storing a batch leaves nothing behind for long: another worker takes
the records it held once they have waited MOMOR_RECORDS_CLAIM_SECONDS (minutes in production,
where Redis's own visibility time-out used to hide them for an hour), and stores each once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from django.db.models import Sum

from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from tests.billing.conftest import HI, World, child_env, test_database_url
from tests.processes import Worker

pytestmark = [
    pytest.mark.celery,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),  # two workers start one after the other, 15-60 s each when busy
]

CLAIM_SECONDS = 2


@pytest.fixture
def workers(gateway: str) -> Iterator[list[Worker]]:
    """Start workers with `start_worker`; all are stopped at the end."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


def start_worker(workers: list[Worker], tmp_path: Path) -> Worker:
    from django.conf import settings

    env = child_env(MOMOR_RECORDS_CLAIM_SECONDS=str(CLAIM_SECONDS))
    worker = Worker(env, tmp_path / f"worker-{len(workers)}.log", f"claims-{len(workers)}")
    workers.append(worker)
    worker.wait_ready(settings.REDIS_URL)
    return worker


def wait_for_a_blocked_writer(conn: psycopg.Connection, timeout: float = 20) -> None:
    """Until another session waits on a lock this test holds (the worker, storing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiting = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
        if waiting and waiting[0]:
            return
        time.sleep(0.05)
    raise AssertionError("the worker never started storing")


def test_records_a_killed_worker_held_are_stored_by_another_within_the_claim_time(
    world: World, workers: list[Worker], tmp_path: Path
) -> None:
    world.fake.script("gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10})
    first = start_worker(workers, tmp_path)
    with psycopg.connect(test_database_url()) as lock:
        # the organization's balance row is held: the worker blocks mid-batch, holding it
        lock.execute("SELECT 1 FROM accounts_organization WHERE id = %s FOR UPDATE", [world.org.pk])
        responses = [world.post({"model": "openai/gpt-5", "messages": HI}) for _ in range(5)]
        assert [r.status_code for r in responses] == [200] * 5
        with psycopg.connect(test_database_url(), autocommit=True) as watch:
            wait_for_a_blocked_writer(watch)
        first.kill()
        lock.rollback()

    killed_at = time.monotonic()
    start_worker(workers, tmp_path)
    ids = [r.headers["x-momor-request-id"] for r in responses]
    while Generation.objects.filter(request_id__in=ids).count() < 5:
        assert time.monotonic() - killed_at < CLAIM_SECONDS + 20, "never claimed"
        time.sleep(0.1)

    cost = Decimal("0.000225000")  # 100 x 1.25 + 10 x 10 per million
    stored = Generation.objects.filter(request_id__in=ids)
    assert stored.aggregate(s=Sum("cost"))["s"] == 5 * cost
    charges = LedgerEntry.objects.filter(idempotency_key__in=[f"charge:{i}" for i in ids])
    assert charges.count() == 5
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk) == Decimal(100) - 5 * cost
