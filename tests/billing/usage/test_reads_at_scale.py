"""Reads that stay cheap however many generations there are, on PostgreSQL: a generation's
attempts are read from its own month partition (its detail page, `GET /v1/generation`, each
page of the management API), the CSV export reads only its columns, a management key's last
use is written at most once a minute, and the admin's indexes cover every month partition."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey, KeyKind, Organization
from billing.models import Generation
from billing.retention.partitions import partition_name, partition_names, partitions_ensure
from billing.usage.lookup import generation_detail
from tests.conftest import make_key
from tests.ui_helpers import make_generation, signed_in, streamed

pytestmark = pytest.mark.django_db

ADMIN_INDEXES = ("generation_provider", "generation_model", "generation_unserved")


def attempt_reads(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if 'FROM "billing_attempt"' in q["sql"]]


def partitions_read(sql: str) -> set[str]:
    """The partitions of billing_attempt PostgreSQL's plan of `sql` reads (a plan of index
    scans names each partition's index too, `... on billing_attempt_p2026_10_..._key`)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return set(re.findall(r" on (billing_attempt_(?:p\d{4}_\d{2}|default))\b", plan))


def month_of(generation: Generation) -> str:
    return partition_name("billing_attempt", generation.created_at.date())


def test_a_generations_page_reads_its_attempts_from_its_month_alone(
    alice: Any, acme: Organization
) -> None:
    generation = make_generation(acme)

    with CaptureQueriesContext(connection) as captured:
        page = signed_in(alice).get(f"/generations/{generation.request_id}/")

    assert page.status_code == 200
    assert "110 ms" in page.content.decode()
    [read] = attempt_reads(captured)
    assert '"billing_attempt"."created_at" = ' in read
    assert "JOIN" not in read
    assert partitions_read(read) == {month_of(generation)}


def test_a_calls_record_reads_its_attempts_from_its_month_alone(acme: Organization) -> None:
    generation = make_generation(acme)

    with CaptureQueriesContext(connection) as captured:
        found = generation_detail(generation.request_id, acme.pk)

    assert found is not None
    assert [a["latency_ms"] for a in found["attempts"]] == [110]
    [read] = attempt_reads(captured)
    assert partitions_read(read) == {month_of(generation)}


def test_a_page_of_the_management_api_reads_the_attempts_of_its_months_in_one_query(
    acme: Organization,
) -> None:
    plain, _ = make_key(acme, name="ops", kind=KeyKind.MANAGEMENT)
    now = timezone.now()
    older = now - timedelta(days=40)
    partitions_ensure(older.date(), now.date())
    recent, old = make_generation(acme, created_at=now), make_generation(acme, created_at=older)

    with CaptureQueriesContext(connection) as captured:
        response = Client(HTTP_AUTHORIZATION=f"Bearer {plain}").get("/api/manage/generations/")

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [(r["id"], len(r["attempts"])) for r in rows] == [
        (recent.request_id, 1),
        (old.request_id, 1),
    ]
    [read] = attempt_reads(captured)
    assert '"billing_attempt"."created_at" >= ' in read
    months = {month_of(recent), month_of(old)}
    spanned = set(partition_names("billing_attempt")) - {"billing_attempt_default"}
    assert months <= partitions_read(read) < spanned | {"billing_attempt_default"}


def test_the_csv_export_reads_only_its_columns(alice: Any, acme: Organization) -> None:
    _, key = make_key(acme, name="ci")
    make_generation(acme, key=key, routing={"order": ["openai"]}, selectors=["openai/gpt-5"])

    with CaptureQueriesContext(connection) as captured:
        response = signed_in(alice).get("/generations/export.csv")
        rows = list(csv.DictReader(io.StringIO(streamed(response))))

    assert [(r["model"], r["api_key"]) for r in rows] == [("openai/gpt-5", key.prefix)]
    reads = [q["sql"] for q in captured.captured_queries]
    [read] = [sql for sql in reads if 'FROM "billing_generation"' in sql]
    for unread in ("routing", "selectors", "prices", "referer", "session_id", "key_hash"):
        assert f'."{unread}"' not in read


def test_a_management_key_notes_its_last_use_at_most_once_a_minute(acme: Organization) -> None:
    plain, key = make_key(acme, name="ops", kind=KeyKind.MANAGEMENT)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {plain}")

    def used_after_a_call() -> tuple[Any, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/api/manage/generations/").status_code == 200
        writes = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("UPDATE")]
        return ApiKey.objects.get(pk=key.pk).last_used_at, writes

    first, writes = used_after_a_call()
    assert first is not None
    assert len(writes) == 1
    again, writes = used_after_a_call()
    assert (again, writes) == (first, [])

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(seconds=61))
    later, writes = used_after_a_call()
    assert len(writes) == 1
    assert later > first


def test_the_admin_indexes_cover_every_month_partition_made_before_or_after(db: None) -> None:
    far = timezone.now() + timedelta(days=800)
    partitions_ensure(far.date(), far.date())
    partitions = partition_names("billing_generation")
    assert partition_name("billing_generation", far.date()) in partitions

    with connection.cursor() as cursor:
        for name in ADMIN_INDEXES:
            valid = "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass"
            cursor.execute(valid, [name])
            assert cursor.fetchone() == (True,), name
            cursor.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid "
                "JOIN pg_class c ON c.oid = x.indrelid "
                "WHERE i.inhparent = %s::regclass AND x.indisvalid ORDER BY c.relname",
                [name],
            )
            assert [table for (table,) in cursor.fetchall()] == partitions, name
