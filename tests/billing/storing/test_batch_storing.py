"""A batch of records is stored together, in a fixed number of queries however many records it
holds, with every guarantee of storing them one by one: a record the database refuses is parked
alone with its charge posted, a record delivered twice (or stored meanwhile by another consumer)
is stored and charged once, each charge's balance after runs on from the one before in its
organization, and generations and attempts land in their months' partitions, each attempt with
its own generation. On PostgreSQL, through `records_store` as the consumers call it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey, Organization
from billing.calls.cost import to_units
from billing.calls.records import CallRecord, TokenCounts, record_payload
from billing.ledger.posting import ledger_post, ledger_sum
from billing.live.publish import Message
from billing.models import Attempt, DailyRollup, DeadLetter, EntryKind, Generation, LedgerEntry
from billing.retention.partitions import partition_name
from billing.storing import store as storing
from billing.storing.generations import generation_store
from billing.storing.store import records_store
from tests.billing.records import a_record
from tests.conftest import make_key, make_org

pytestmark = pytest.mark.django_db(transaction=True)

CALL_COST = Decimal("0.00225")  # a_record's 1,000 prompt and 100 completion tokens
BUDGET = 20  # a batch's statements, BEGIN, COMMIT and each COPY's ids included (two orgs, two keys)


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What admission and the live feed are told, batch by batch."""
    calls: dict[str, list[Any]] = {"charges": [], "published": [], "messages": []}
    summarised = storing.live_messages

    def published(generations: list[Generation]) -> list[Message]:
        calls["published"].append(generations)
        return summarised(generations)

    monkeypatch.setattr(storing, "charges_posted", calls["charges"].append)
    monkeypatch.setattr(storing, "live_messages", published)
    monkeypatch.setattr(storing, "publish_messages", calls["messages"].append)
    return calls


def batch(records: list[CallRecord]) -> list[bytes]:
    return [record_payload(record) for record in records]


def costing(org: Organization, prompt: int, **fields: Any) -> CallRecord:
    """A served call of `prompt` prompt and 100 completion tokens."""
    record = a_record(org.pk, **fields)
    tokens = TokenCounts(prompt=prompt, completion=100)
    return replace(record, tokens=tokens, attempts=[replace(record.attempts[0], tokens=tokens)])


def assert_ledger_exact(org: Organization) -> None:
    """The balance is the ledger's sum, and each entry's balance after the running sum."""
    org.refresh_from_db()
    total = Decimal(0)
    for entry in LedgerEntry.objects.filter(organization=org).order_by("id"):
        total += entry.amount
        assert entry.balance_after == total
    assert org.balance == total == ledger_sum(org.pk)


def charge_count(records: list[CallRecord]) -> int:
    keys = [f"charge:{record.request_id}" for record in records]
    return LedgerEntry.objects.filter(idempotency_key__in=keys).count()


def stored_by_batch(caplog: pytest.LogCaptureFixture) -> bool:
    return not any("one by one" in message for message in caplog.messages)


def queries_of(payloads: list[bytes]) -> int:
    with CaptureQueriesContext(connection) as captured:
        records_store(payloads)
    return len(captured.captured_queries)


def test_a_batch_is_stored_in_as_many_queries_whatever_its_size(
    acme: Organization, globex: Organization, caplog: pytest.LogCaptureFixture
) -> None:
    keys = [make_key(org)[1].pk for org in (acme, globex)]

    def records(count: int) -> list[CallRecord]:
        return [
            a_record((acme, globex)[n % 2].pk, api_key_id=keys[n % 2], attempts=[])
            if n % 5 == 4
            else a_record((acme, globex)[n % 2].pk, api_key_id=keys[n % 2])
            for n in range(count)
        ]

    caplog.set_level(logging.INFO, logger="billing.storing.store")
    small, large = records(10), records(200)
    assert queries_of(batch(small)) == queries_of(batch(large)) <= BUDGET

    assert stored_by_batch(caplog)
    everything = small + large
    assert Generation.objects.count() == 210
    assert Attempt.objects.count() == 210 - 42  # every fifth call made no attempt
    assert LedgerEntry.objects.filter(kind=EntryKind.CHARGE).count() == 168
    for org in (acme, globex):
        assert_ledger_exact(org)
        assert org.balance == Decimal(100) - 84 * CALL_COST
        calls = DailyRollup.objects.filter(organization=org).values_list("calls", "cost")
        assert list(calls) == [(105, 84 * CALL_COST)]  # one slot: the calls without attempts too
    last = {key: max(r.created_at for r in large if r.api_key_id == key) for key in keys}
    assert dict(ApiKey.objects.filter(pk__in=keys).values_list("pk", "last_used_at")) == last
    assert charge_count(everything) == 168


def test_a_record_the_database_refuses_is_parked_alone_with_its_charge(
    acme: Organization, told: dict[str, list[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    records = [a_record(acme.pk) for _ in range(20)]
    # more prompt tokens than a PostgreSQL integer holds
    records[7] = costing(acme, 3_000_000_000)
    caplog.set_level(logging.INFO, logger="billing.storing.store")

    records_store([b"not a record", *batch(records)])

    assert not stored_by_batch(caplog)
    assert Generation.objects.count() == 19
    assert not Generation.objects.filter(request_id=records[7].request_id).exists()
    letter = DeadLetter.objects.get(request_id=records[7].request_id)
    assert (letter.error, letter.charge_posted) == ("DataError: integer out of range", True)
    assert letter.cost == Decimal("3750.001")
    assert DeadLetter.objects.filter(request_id="").count() == 1  # the payload that did not decode
    assert charge_count(records) == 20
    assert_ledger_exact(acme)
    assert acme.balance == Decimal(100) - 19 * CALL_COST - Decimal("3750.001")
    [charges] = told["charges"]
    assert [c[1] for c in charges] == [r.request_id for r in records]
    [published] = told["published"]
    assert [g.request_id for g in published] == [r.request_id for r in records if r != records[7]]
    [messages] = told["messages"]
    sent = [summary["request_id"] for _, message in messages for summary in message["generations"]]
    assert sorted(sent) == sorted(g.request_id for g in published)


def test_a_batch_delivered_twice_is_stored_and_charged_once(
    acme: Organization, globex: Organization, told: dict[str, list[Any]]
) -> None:
    records = [a_record((acme, globex)[n % 3 == 0].pk) for n in range(30)]
    payloads = batch(records)

    records_store(payloads[:20] + payloads[:5])  # five of them twice in one batch
    records_store(payloads + payloads[20:25])  # all again, five of the others twice

    assert Generation.objects.count() == 30
    assert charge_count(records) == 30
    assert Attempt.objects.count() == 30
    assert sum(DailyRollup.objects.values_list("calls", flat=True)) == 30
    for org in (acme, globex):
        assert_ledger_exact(org)
        assert org.balance == Decimal(100) - CALL_COST * sum(
            r.organization_id == org.pk for r in records
        )
    first, again = told["charges"]  # each call's charge, told again as it was
    assert (len(first), len(set(first)), len(again), len(set(again))) == (25, 20, 35, 30)
    assert set(first) < set(again)
    assert [len(published) for published in told["published"]] == [20, 10]


def _ids(records: list[CallRecord]) -> set[str]:
    return {record.request_id for record in records}


def test_a_record_stored_meanwhile_by_another_consumer_is_not_stored_again(
    acme: Organization, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    records = [a_record(acme.pk) for _ in range(12)]
    records_store(batch(records[:4]))
    # another consumer stored them after this one looked: its insert finds them there
    monkeypatch.setattr("billing.storing.batches._stored_already", lambda records: set())
    caplog.set_level(logging.INFO, logger="billing.storing.store")

    records_store(batch(records))

    assert not stored_by_batch(caplog)
    assert Generation.objects.count() == 12
    assert charge_count(records) == 12
    assert DeadLetter.objects.count() == 0
    assert_ledger_exact(acme)
    assert acme.balance == Decimal(100) - 12 * CALL_COST


def test_consumers_storing_overlapping_batches_at_once_charge_each_call_once(
    acme: Organization, globex: Organization
) -> None:
    orgs = (acme, globex)
    for round_ in range(3):
        records = [costing(orgs[n % 2], 1000 + n) for n in range(200)]
        payloads = batch(records)
        _at_once([
            partial(records_store, payloads[:150]),
            partial(records_store, payloads[50:][::-1]),
            partial(records_store, payloads[::3]),
            partial(_top_ups, orgs, Decimal(round_ + 1)),
        ])  # fmt: skip
        assert Generation.objects.filter(request_id__in=_ids(records)).count() == 200
        assert charge_count(records) == 200
    assert Attempt.objects.count() == 600
    assert sum(DailyRollup.objects.values_list("calls", flat=True)) == 600
    for org in orgs:
        assert_ledger_exact(org)
        spent_ = Generation.objects.filter(organization=org).aggregate(s=Sum("cost"))["s"]
        assert org.balance == Decimal(100) + 6 - spent_


def _top_ups(orgs: tuple[Organization, ...], amount: Decimal) -> None:
    for org in orgs:
        ledger_post(organization_id=org.pk, kind=EntryKind.TOPUP, amount=amount)


def _at_once(work: list[Callable[[], object]]) -> None:
    """Each in a thread of its own (its own connection), started together."""
    barrier = threading.Barrier(len(work))
    errors: list[BaseException] = []

    def run(one: Callable[[], object]) -> None:
        try:
            barrier.wait()
            one()
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(one,)) for one in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_charges_run_on_in_stream_order_in_each_organization(
    acme: Organization, globex: Organization, told: dict[str, list[Any]]
) -> None:
    initech = make_org("initech", credits=Decimal(7))
    orgs = (globex, initech, acme)
    records = [costing(orgs[n % 3], 100 * n) for n in range(1, 61)]
    records[10:10] = [a_record(acme.pk, attempts=[])]  # failed before output: no charge

    records_store(batch(records))

    entries = {e.idempotency_key: e for e in LedgerEntry.objects.filter(kind=EntryKind.CHARGE)}
    for org in orgs:
        assert_ledger_exact(org)
        mine = [r for r in records if r.organization_id == org.pk and r.attempts]
        charges = [entries[f"charge:{r.request_id}"] for r in mine]
        assert [c.pk for c in charges] == sorted(c.pk for c in charges)
        opening = LedgerEntry.objects.get(organization=org, kind=EntryKind.TOPUP).amount
        costs = [Generation.objects.get(request_id=r.request_id).cost for r in mine]
        runs = [opening - sum(costs[: n + 1], Decimal(0)) for n in range(len(costs))]
        assert [c.balance_after for c in charges] == runs
        assert [c.amount for c in charges] == [-cost for cost in costs]
    [charges] = told["charges"]
    assert {rid: (org, entry, after) for org, rid, entry, after in charges} == {
        str(key).removeprefix("charge:"): (e.organization_id, e.pk, to_units(e.balance_after))
        for key, e in entries.items()
    }
    [published] = told["published"]
    by_org = sorted(records, key=lambda r: r.organization_id)  # stream order within each
    assert [g.request_id for g in published] == [r.request_id for r in by_org]


def _attempts(record: CallRecord, count: int) -> CallRecord:
    tried = [
        replace(record.attempts[0], position=n, upstream_id=f"{record.request_id}-{n}")
        for n in range(count)
    ]
    return replace(record, attempts=tried)


def home(table: str, pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {table} WHERE id = %s", [pk])  # noqa: S608 - a table name the test passes, the id bound
        return str(cursor.fetchone()[0])


def test_a_batch_spanning_months_lands_in_their_partitions_each_attempt_with_its_call(
    acme: Organization,
) -> None:
    now = datetime.now(UTC)
    moments = [now, now + timedelta(days=40), now - timedelta(days=800), now + timedelta(days=5)]
    records = [
        _attempts(a_record(acme.pk, created_at=moments[n % 4]), 1 + n % 3) for n in range(24)
    ]

    records_store(batch(records))

    for record in records:
        generation = Generation.objects.get(request_id=record.request_id)
        tried = list(Attempt.objects.of(generation))
        assert [a.upstream_id for a in tried] == [a.upstream_id for a in record.attempts]
        assert {a.created_at for a in tried} == {record.created_at}
        month = record.created_at.date()
        expected = partition_name("billing_generation", month)
        if record.created_at < now - timedelta(days=60):
            expected = "billing_generation_default"
        assert home("billing_generation", generation.pk) == expected
        assert home("billing_attempt", tried[0].pk) == expected.replace("generation", "attempt")
    assert_ledger_exact(acme)


def test_a_long_journal_is_stored_a_chunk_at_a_time(
    acme: Organization, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(storing, "CHUNK", 50)
    records = [a_record(acme.pk) for _ in range(120)]
    records[70] = a_record(acme.pk, latency_ms=-1)  # refused by its column's check
    caplog.set_level(logging.INFO, logger="billing.storing.store")

    records_store(batch(records))

    fallbacks = [m for m in caplog.messages if "one by one" in m]
    assert len(fallbacks) == 1 and fallbacks[0].startswith("storing 50 records one by one")
    assert Generation.objects.count() == 119
    assert DeadLetter.objects.get().request_id == records[70].request_id
    assert charge_count(records) == 120
    assert_ledger_exact(acme)


AWKWARD = 'tab\there, line\nbreak, back\\slash, "quoted", \\N, héllo ✓'


MOMENT = datetime(2026, 11, 30, 23, 59, 59, 999999, tzinfo=UTC)


def _awkward(org: Organization, key: ApiKey, prompt: int) -> CallRecord:
    """A call whose every column holds something COPY's text format must escape."""
    record = costing(org, prompt, api_key_id=key.pk, created_at=MOMENT)
    attempt = replace(
        record.attempts[0],
        error=AWKWARD,
        region="eu\tw",
        latency_ms=7,
        first_token_ms=None,
        prices={"prompt": "1.25", "completion": "10", "note": AWKWARD},
    )
    failed = replace(attempt, position=0, http_status=503, tokens=None, provider="azure")
    return replace(
        record,
        selectors=["openai/gpt-5", AWKWARD],
        error=AWKWARD,
        native_finish_reason="end\tturn",
        latency_ms=12,
        first_token_ms=3,
        client_request_id="req\\1",
        session_id="s\ns",
        app=AWKWARD,
        referer="https://example.com/\\N",
        routing={"order": [AWKWARD], "left_out": {"x/y": "no\ttools"}, "n": [1.5, None, True]},
        trace_id="0af7651916cd43dd8448eb211c80319c",
        attempts=[failed, replace(attempt, position=1)],
    )


def _stored_as(request_id: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """A stored call's generation, attempts and charge, without their ids and own moments."""
    generation = Generation.objects.get(request_id=request_id)
    row = {
        name: value
        for name, value in generation.__dict__.items()
        if name not in {"_state", "id", "request_id", "recorded_at"}
    }
    attempts = [
        {k: v for k, v in vars(a).items() if k not in {"_state", "id", "generation_id"}}
        for a in Attempt.objects.of(generation)
    ]
    charge = LedgerEntry.objects.get(generation_id=generation.pk)
    entry = {
        k: v
        for k, v in vars(charge).items()
        if k not in {"_state", "id", "generation_id", "idempotency_key", "created_at"}
    }
    entry["kind"] = LedgerEntry.objects.filter(pk=charge.pk).values_list("kind", flat=True)[0]
    return row, attempts, entry


def test_a_batch_stores_every_column_as_a_call_stored_alone_does(
    acme: Organization, told: dict[str, list[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    """The batch's inserts (COPY on PostgreSQL) write each value as Django's insert of a call
    stored alone does, escapes, JSON and money included, and give the rows their ids."""
    _, key = make_key(acme)
    alone, first, second = (_awkward(acme, key, prompt) for prompt in (1000, 1000, 2000))
    with transaction.atomic():
        generation_store(alone)
    caplog.set_level(logging.INFO, logger="billing.storing.store")
    before = timezone.now()
    records_store(batch([first, second]))

    assert stored_by_batch(caplog)
    a_row, a_attempts, a_entry = _stored_as(alone.request_id)
    b_row, b_attempts, b_entry = _stored_as(first.request_id)
    assert b_row == a_row
    assert b_attempts == a_attempts
    assert a_entry["amount"] == b_entry["amount"] == -CALL_COST
    assert (
        (a_entry["kind"], a_entry["note"])
        == (b_entry["kind"], b_entry["note"])
        == (
            "charge",
            "openai/gpt-5 via openai",
        )
    )
    assert b_row["selectors"][1] == AWKWARD and b_row["routing"]["n"] == [1.5, None, True]
    published = told["published"][-1]
    assert [g.request_id for g in published] == [first.request_id, second.request_id]
    for generation in published:
        stored = Generation.objects.get(pk=generation.pk)
        assert stored.request_id == generation.request_id
        assert stored.recorded_at >= before
        assert to_units(stored.ledger.get().balance_after) == told_balance(told, stored.request_id)
    assert_ledger_exact(acme)


def told_balance(told: dict[str, list[Any]], request_id: str) -> int:
    """The balance after the call's charge (in units), as admission was told it."""
    charges = [charge for batch in told["charges"] for charge in batch]
    (units,) = [balance for _, rid, _, balance in charges if rid == request_id]
    return int(units)
