"""Records at scale, on PostgreSQL: generations and attempts land in month partitions (or the
default one, moved out when their month is made), retention drops whole months and keeps the
ledger and the daily rollups, the recording keeps the rollups exactly once per call however
often a record is delivered, the backfill rebuilds them, and seeding writes realistic rows."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.models import Organization
from bench import seed
from billing.models import Attempt, DailyRollup, Generation, LedgerEntry
from billing.recording.hand_off import drain, record_call
from billing.retention.partitions import partition_name, partitions_ensure
from billing.usage.reads import with_spend
from tests.billing.records import a_record
from tests.child_process import ROOT
from tests.conftest import make_key, make_org

pytestmark = pytest.mark.django_db(transaction=True)

CALL_COST = Decimal("0.00225")  # a_record's 1,000 prompt and 100 completion tokens


def stored(*records: Any) -> None:
    for record in records:
        asyncio.run(record_call(record))
    assert drain()


def home(table: str, pk: int) -> str:
    """The partition a row lives in."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {table} WHERE id = %s", [pk])  # noqa: S608 - a table name the test passes, the id bound
        return str(cursor.fetchone()[0])


def rollups(org: Organization) -> list[tuple[Any, ...]]:
    rows = DailyRollup.objects.filter(organization=org).order_by("day", "model")
    return list(rows.values_list("day", "model", "api_key_id", "calls", "prompt_tokens", "cost"))


@pytest.fixture
def acme_funded(db: None) -> Organization:
    return make_org("acme", credits=Decimal(100))


def test_a_call_is_stored_in_its_months_partition(acme_funded: Organization) -> None:
    record = a_record(acme_funded.pk)
    stored(record)
    generation = Generation.objects.get(request_id=record.request_id)
    month = record.created_at.date()
    assert home("billing_generation", generation.pk) == partition_name("billing_generation", month)
    attempt = generation.attempts.get()
    assert home("billing_attempt", attempt.pk) == partition_name("billing_attempt", month)


def test_a_month_made_late_takes_its_rows_from_the_default_partition(
    acme_funded: Organization,
) -> None:
    later = datetime.now(UTC).replace(day=15) + timedelta(days=800)
    record = a_record(acme_funded.pk, created_at=later)
    stored(record)
    generation = Generation.objects.get(request_id=record.request_id)
    assert home("billing_generation", generation.pk) == "billing_generation_default"

    made = partitions_ensure(later.date(), later.date())

    assert made == [
        partition_name("billing_generation", later.date()),
        partition_name("billing_attempt", later.date()),
    ]
    assert home("billing_generation", generation.pk) == made[0]
    assert home("billing_attempt", generation.attempts.get().pk) == made[1]
    stored(record)  # delivered again: still one
    assert Generation.objects.filter(request_id=record.request_id).count() == 1


def test_retention_drops_old_months_and_keeps_the_ledger_and_the_figures(
    acme_funded: Organization,
) -> None:
    old_moment = datetime.now(UTC) - timedelta(days=500)
    partitions_ensure(old_moment.date(), old_moment.date())
    old, recent = a_record(acme_funded.pk, created_at=old_moment), a_record(acme_funded.pk)
    stored(old, recent)
    figures = rollups(acme_funded)
    charges = LedgerEntry.objects.filter(kind="charge").count()

    call_command("maintain_records", "--retention-days", "365")

    assert list(Generation.objects.values_list("request_id", flat=True)) == [recent.request_id]
    assert Attempt.objects.count() == 1
    assert rollups(acme_funded) == figures
    assert LedgerEntry.objects.filter(kind="charge").count() == charges == 2
    month = partition_name("billing_generation", old_moment.date())
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [month])
        assert cursor.fetchone() == (None,)
    acme_funded.refresh_from_db()
    assert acme_funded.balance == Decimal(100) - 2 * CALL_COST


def test_without_a_retention_nothing_is_dropped(acme_funded: Organization) -> None:
    old_moment = datetime.now(UTC) - timedelta(days=500)
    stored(a_record(acme_funded.pk, created_at=old_moment))
    call_command("maintain_records")
    assert Generation.objects.count() == 1


def test_a_record_delivered_again_is_counted_once(acme_funded: Organization) -> None:
    _, key = make_key(acme_funded, name="counted")
    record = a_record(acme_funded.pk, api_key_id=key.pk)
    stored(record, record)
    stored(record)

    today = record.created_at.date()
    assert rollups(acme_funded) == [(today, "openai/gpt-5", key.pk, 1, 1000, CALL_COST)]
    assert with_spend(type(key).objects.filter(pk=key.pk)).get().spend == CALL_COST


def test_the_backfill_rebuilds_what_the_recording_kept(acme_funded: Organization) -> None:
    yesterday = datetime.now(UTC) - timedelta(days=1)
    stored(
        a_record(acme_funded.pk),
        a_record(acme_funded.pk, created_at=yesterday),
        a_record(acme_funded.pk, model="mistral/mistral-small", provider="mistral"),
    )
    kept = rollups(acme_funded)
    assert [row[3] for row in kept] == [1, 1, 1]
    DailyRollup.objects.all().delete()

    call_command("backfill_rollups", "--org", "acme")

    assert rollups(acme_funded) == kept


def test_the_backfill_rebuilds_the_usage_of_each_api_apart(acme_funded: Organization) -> None:
    """A chat call and an embeddings call on one model, day and key: two rows of daily usage,
    before the backfill and after."""
    stored(a_record(acme_funded.pk), a_record(acme_funded.pk, api="embeddings"))
    kept = sorted(DailyRollup.objects.values_list("api", "model", "calls", "cost"))
    assert kept == [
        ("chat", "openai/gpt-5", 1, CALL_COST),
        ("embeddings", "openai/gpt-5", 1, CALL_COST),
    ]
    DailyRollup.objects.all().delete()

    call_command("backfill_rollups", "--org", "acme")

    assert sorted(DailyRollup.objects.values_list("api", "model", "calls", "cost")) == kept


def test_the_backfill_refuses_an_unknown_organization(db: None) -> None:
    with pytest.raises(CommandError, match="no organization 'nobody'"):
        call_command("backfill_rollups", "--org", "nobody")


def test_seeding_writes_realistic_calls_and_their_rollups(acme_funded: Organization) -> None:
    _, key = make_key(acme_funded, name="seeded")
    call_command(seed.Command(), "--org", "acme", "--count", "3000", "--days", "40")

    generations = Generation.objects.for_org(acme_funded.pk)
    assert generations.count() == Attempt.objects.count() == 3000
    assert set(generations.values_list("api_key_id", flat=True)) == {key.pk}
    oldest = generations.order_by("created_at").first()
    assert oldest is not None
    assert datetime.now(UTC) - oldest.created_at < timedelta(days=40)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM billing_generation_default")
        assert cursor.fetchone() == (0,)
    totals = generations.totals()
    rolled = DailyRollup.objects.filter(organization=acme_funded)
    assert sum(rolled.values_list("calls", flat=True)) == 3000
    assert sum(rolled.values_list("cost", flat=True)) == totals.cost > 0
    assert rolled.filter(day__lt=datetime.now(UTC).date() - timedelta(days=41)).count() == 0


def test_seeding_refuses_an_unknown_organization(db: None) -> None:
    with pytest.raises(CommandError, match="no organization 'nobody'"):
        call_command(seed.Command(), "--org", "nobody", "--count", "10")


SQLITE_COUNTS = """
from billing.models import Attempt, DailyRollup, Generation
from django.db.models import Sum
rolled = DailyRollup.objects.aggregate(calls=Sum("calls"), cost=Sum("cost"))
spent = Generation.objects.aggregate(c=Sum("cost"))["c"]
print(Generation.objects.count(), Attempt.objects.count(), rolled["calls"],
      abs(rolled["cost"] - spent) < 1e-6 and spent > 0)
"""


def test_seeding_writes_the_same_records_on_sqlite(tmp_path: Path) -> None:
    """SQLite sums decimals in floating point: the totals agree to a millionth of a dollar."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'momor.sqlite3'}"}

    def run(*args: str, program: tuple[str, ...] = ("manage.py",)) -> str:
        done = subprocess.run(  # noqa: S603 - our own manage.py
            [sys.executable, *program, *args], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("migrate", "-v", "0")
    run("create_org", "seeded", "--credits", "10")
    assert "seeded: 12000 generations" in run(
        "--org", "seeded", "--count", "12000", "--days", "20", program=("-m", "bench.seed")
    )
    assert run("shell", "-v", "0", "-c", SQLITE_COUNTS).split() == [
        "12000",
        "12000",
        "12000",
        "True",
    ]
