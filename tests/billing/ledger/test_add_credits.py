"""`manage.py add_credits --org SLUG AMOUNT`: a ledger top-up, and the new balance printed."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Organization
from billing.ledger.posting import ledger_sum
from billing.models import EntryKind, LedgerEntry
from tests.child_process import manage


def run(*args: str) -> str:
    out = StringIO()
    call_command("add_credits", *args, stdout=out)
    return out.getvalue()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


def test_it_tops_up_the_balance_and_prints_it(acme: Organization) -> None:
    assert run("--org", "acme", "25.50") == "acme: balance 125.50 USD\n"
    acme.refresh_from_db()
    assert acme.balance == Decimal("125.5") == ledger_sum(acme.pk)
    entry = LedgerEntry.objects.filter(organization=acme).first()
    assert entry is not None
    assert (entry.kind, entry.amount, entry.balance_after, entry.note) == (
        EntryKind.TOPUP,
        Decimal("25.5"),
        Decimal("125.5"),
        "add_credits",
    )


def test_it_prints_every_decimal_place_the_balance_has(acme: Organization) -> None:
    assert run("--org", "acme", "0.000000001") == "acme: balance 100.000000001 USD\n"


def test_it_tops_up_only_the_organization_named(acme: Organization, globex: Organization) -> None:
    assert run("--org", "globex", "7") == "globex: balance 107.00 USD\n"
    acme.refresh_from_db()
    assert acme.balance == Decimal(100)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--org", "initech", "10"], "unknown organization 'initech'"),
        (["--org", "acme", "ten"], "'ten' is not an amount of USD"),
        (["--org", "acme", "Infinity"], "'Infinity' is not an amount of USD"),
        (["--org", "acme", "1e9"], "'1e9' is not an amount of USD"),
        (["--org", "acme", "1.0000000001"], "'1.0000000001' has more than 9 decimal places"),
        (["--org", "acme", "0"], "the amount must be positive, not 0"),
        (["--org", "acme", "-5"], "the amount must be positive, not -5"),
    ],
    ids=["unknown-org", "word", "infinite", "too-large", "too-fine", "zero", "negative"],
)
def test_it_refuses_a_bad_argument(acme: Organization, args: list[str], message: str) -> None:
    assert refusal(*args) == message
    acme.refresh_from_db()
    assert acme.balance == Decimal(100)
    assert LedgerEntry.objects.filter(organization=acme).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_real_run_prints_the_balance_and_a_bad_amount_exits_non_zero(
    acme: Organization,
) -> None:
    done = manage("add_credits", "--org", "acme", "12.5")
    assert (done.returncode, done.stdout, done.stderr) == (0, "acme: balance 112.50 USD\n", "")
    done = manage("add_credits", "--org", "acme", "twelve")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "CommandError: 'twelve' is not an amount of USD\n"


def test_a_retry_with_its_idempotency_key_posts_once_and_prints_the_first_result(
    acme: Organization,
) -> None:
    first = run("--org", "acme", "25", "--idempotency-key", "invoice-7")
    run("--org", "acme", "5")

    assert run("--org", "acme", "25", "--idempotency-key", "invoice-7") == first
    assert first == "acme: balance 125.00 USD\n"
    acme.refresh_from_db()
    assert acme.balance == Decimal(130) == ledger_sum(acme.pk)
    assert LedgerEntry.objects.filter(organization=acme, kind=EntryKind.TOPUP).count() == 3


def test_an_idempotency_key_is_the_organizations_own(
    acme: Organization, globex: Organization
) -> None:
    run("--org", "acme", "25", "--idempotency-key", "invoice-7")

    assert run("--org", "globex", "25", "--idempotency-key", "invoice-7") == (
        "globex: balance 125.00 USD\n"
    )


def test_another_amount_under_a_used_idempotency_key_is_refused(acme: Organization) -> None:
    run("--org", "acme", "25", "--idempotency-key", "invoice-7")

    message = refusal("--org", "acme", "26", "--idempotency-key", "invoice-7")

    assert message.startswith("the idempotency key 'invoice-7' posted entry ")
    assert message.endswith(" (topup, 25 USD); this posting is not the same")
    acme.refresh_from_db()
    assert acme.balance == Decimal(125)


@pytest.mark.django_db(transaction=True)
def test_a_real_retry_exits_zero_with_the_same_output(acme: Organization) -> None:
    runs = [manage("add_credits", "--org", "acme", "9", "--idempotency-key", "k") for _ in "ab"]

    assert [(done.returncode, done.stdout) for done in runs] == [
        (0, "acme: balance 109.00 USD\n")
    ] * 2
    acme.refresh_from_db()
    assert acme.balance == Decimal(109)
