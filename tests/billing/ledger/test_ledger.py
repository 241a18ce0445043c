"""The credits ledger: the balance is always the sum of the entries, even under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal

import pytest
from django.db import connection

from accounts.models import Organization
from billing.ledger.posting import ledger_post, ledger_sum
from billing.models import EntryKind, LedgerEntry
from tests.conftest import make_org

THREADS = 8
POSTS_PER_THREAD = 10


def _post(org: Organization, kind: EntryKind, amount: str, **extra: str) -> LedgerEntry | None:
    return ledger_post(organization_id=org.pk, kind=kind, amount=Decimal(amount), **extra)


def _balance(org: Organization) -> Decimal:
    return Organization.objects.values_list("balance", flat=True).get(pk=org.pk)


def _running_sums(org: Organization) -> tuple[list[Decimal], list[Decimal]]:
    """Each entry's balance_after, and the running sum of amounts, both in posting order."""
    entries = list(LedgerEntry.objects.filter(organization=org).order_by("id"))
    sums, total = [], Decimal(0)
    for entry in entries:
        total += entry.amount
        sums.append(total)
    return [entry.balance_after for entry in entries], sums


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    """Run work(i) in `count` threads started together; each closes its own connection."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            work(index)
        except BaseException as error:  # reported by the assert below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_the_balance_is_the_ledger_sum_after_every_kind_of_movement(db: None) -> None:
    org = make_org("acme")
    _post(org, EntryKind.TOPUP, "100")
    _post(org, EntryKind.CHARGE, "-0.000355")
    _post(org, EntryKind.CHARGE, "-24.5")
    _post(org, EntryKind.REFUND, "0.000355")
    _post(org, EntryKind.ADJUSTMENT, "-10.25")
    _post(org, EntryKind.ADJUSTMENT, "3")
    assert _balance(org) == Decimal("68.25")
    assert ledger_sum(org.pk) == Decimal("68.25")


def test_each_entry_records_the_running_balance(db: None) -> None:
    org = make_org("acme")
    for kind, amount in [
        (EntryKind.TOPUP, "50"),
        (EntryKind.CHARGE, "-0.000000001"),
        (EntryKind.CHARGE, "-20"),
        (EntryKind.REFUND, "5.5"),
    ]:
        _post(org, kind, amount)
    balances, sums = _running_sums(org)
    assert balances == [
        Decimal("50"),
        Decimal("49.999999999"),
        Decimal("29.999999999"),
        Decimal("35.499999999"),
    ]
    assert balances == sums


def test_the_balance_may_go_below_zero_and_stays_the_sum(db: None) -> None:
    org = make_org("acme", credits=Decimal("1"))
    _post(org, EntryKind.CHARGE, "-1.5")
    assert _balance(org) == Decimal("-0.5")
    assert ledger_sum(org.pk) == Decimal("-0.5")


def test_an_idempotency_key_posts_once(db: None) -> None:
    org = make_org("acme", credits=Decimal("10"))
    first = _post(org, EntryKind.CHARGE, "-2", idempotency_key="gen-0001")
    second = _post(org, EntryKind.CHARGE, "-2", idempotency_key="gen-0001")
    assert first is not None
    assert first.balance_after == Decimal("8")
    assert second is None
    assert _balance(org) == Decimal("8")
    assert ledger_sum(org.pk) == Decimal("8")
    assert LedgerEntry.objects.filter(idempotency_key="gen-0001").count() == 1


def test_entries_of_one_organization_leave_the_others_alone(db: None) -> None:
    acme, globex = make_org("acme"), make_org("globex", credits=Decimal("7"))
    _post(acme, EntryKind.TOPUP, "3")
    assert (_balance(acme), _balance(globex)) == (Decimal("3"), Decimal("7"))
    assert (ledger_sum(acme.pk), ledger_sum(globex.pk)) == (Decimal("3"), Decimal("7"))


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_lose_no_update() -> None:
    org = make_org("acme", credits=Decimal("1000"))

    def post_many(index: int) -> None:
        for n in range(POSTS_PER_THREAD):
            if n % 2:
                _post(org, EntryKind.CHARGE, "-1.000000001")
            else:
                _post(org, EntryKind.REFUND, f"0.{index}")

    _in_threads(THREADS, post_many)

    half = POSTS_PER_THREAD // 2
    refunds = sum(Decimal(f"0.{i}") for i in range(THREADS)) * half
    expected = Decimal("1000") - Decimal("1.000000001") * half * THREADS + refunds
    assert LedgerEntry.objects.filter(organization=org).count() == 1 + THREADS * POSTS_PER_THREAD
    assert _balance(org) == expected
    assert ledger_sum(org.pk) == expected
    balances, sums = _running_sums(org)
    assert balances == sums


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_of_one_idempotency_key_post_once() -> None:
    org = make_org("acme", credits=Decimal("10"))
    results: list[LedgerEntry | None] = []

    def post_once(index: int) -> None:
        results.append(_post(org, EntryKind.CHARGE, "-2.5", idempotency_key="gen-0002"))

    _in_threads(THREADS, post_once)

    assert sum(result is not None for result in results) == 1
    assert results.count(None) == THREADS - 1
    assert _balance(org) == Decimal("7.5")
    assert ledger_sum(org.pk) == Decimal("7.5")
    assert LedgerEntry.objects.filter(idempotency_key="gen-0002").count() == 1
