"""What the retention dropped stays stored once: a record delivered again after its generation
was dropped (a journal applied late, a stream entry claimed again) is not stored, charged or
counted again, one too old to tell is parked with its charge posted once, and the backfill
keeps the usage of the days whose generations were dropped. The redelivered record was stored
again and its rollup counted twice, and the backfill deleted the dropped days' usage."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command

from accounts.models import Organization
from billing.models import DailyRollup, DeadLetter, Generation, LedgerEntry
from billing.recording.hand_off import drain, record_call
from billing.retention.partitions import partitions_ensure
from tests.billing.records import a_record
from tests.conftest import make_org

pytestmark = pytest.mark.django_db(transaction=True)

CALL_COST = Decimal("0.00225")  # a_record's 1,000 prompt and 100 completion tokens


def stored(*records: Any) -> None:
    for record in records:
        asyncio.run(record_call(record))
    assert drain()


def figures(org: Organization) -> list[tuple[Any, ...]]:
    rows = DailyRollup.objects.filter(organization=org).order_by("day", "model", "requested")
    return list(rows.values_list("day", "model", "requested", "calls", "prompt_tokens", "cost"))


def books(org: Organization) -> tuple[Decimal, int]:
    org.refresh_from_db()
    return org.balance, LedgerEntry.objects.filter(organization=org).count()


@pytest.fixture
def acme(db: None) -> Organization:
    return make_org("acme", credits=Decimal(100))


def days_ago(days: int) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


def test_a_record_delivered_again_after_its_generation_was_dropped_is_stored_once(
    acme: Organization,
) -> None:
    old_moment = days_ago(400)
    partitions_ensure(old_moment.date(), old_moment.date())
    charged = a_record(acme.pk, created_at=old_moment)
    free = a_record(acme.pk, created_at=old_moment, status="refused", model="", attempts=[])
    stored(charged, free)
    before, kept = figures(acme), books(acme)
    assert kept == (Decimal(100) - CALL_COST, 2)

    call_command("maintain_records", "--retention-days", "365")
    stored(charged, free)

    assert not Generation.objects.exists()
    assert figures(acme) == before
    assert books(acme) == kept
    assert not DeadLetter.objects.exists()


def test_a_record_older_than_the_dropped_ids_kept_is_parked_and_charged_once(
    acme: Organization,
) -> None:
    record = a_record(acme.pk, created_at=days_ago(500))  # in the default partition
    stored(record)
    before, kept = figures(acme), books(acme)

    call_command("maintain_records", "--retention-days", "365")
    stored(record)

    assert not Generation.objects.exists()
    assert figures(acme) == before
    assert books(acme) == kept
    letter = DeadLetter.objects.get(request_id=record.request_id)
    assert letter.error.startswith("TooOld: made before")
    assert (letter.cost, letter.charge_posted) == (CALL_COST, True)  # posted when first stored


def test_the_backfill_keeps_the_usage_of_the_days_the_retention_dropped(
    acme: Organization,
) -> None:
    stored(a_record(acme.pk, created_at=days_ago(400)), a_record(acme.pk))
    before = figures(acme)
    assert [row[3] for row in before] == [1, 1]
    call_command("maintain_records", "--retention-days", "365")

    call_command("backfill_rollups", "--org", "acme", "--since", days_ago(401).date().isoformat())

    assert figures(acme) == before
