"""`manage.py create_org SLUG [--name N] [--credits AMOUNT] [--zdr]`: an organization, its first
credits on the ledger, one line printed; bad input refused with one line and nothing written."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Organization
from billing.models import EntryKind, LedgerEntry


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


@pytest.mark.django_db
def test_create_org_creates_an_organization_with_its_credits_on_the_ledger() -> None:
    out = run("create_org", "initech", "--name", "Initech", "--credits", "25.50")
    assert out == "initech: created, balance 25.50 USD, zdr hold off\n"
    initech = Organization.objects.get(slug="initech")
    assert (initech.name, initech.balance, initech.zdr_hold) == ("Initech", Decimal("25.5"), False)
    entry = LedgerEntry.objects.get(organization=initech)
    assert (entry.kind, entry.amount, entry.balance_after) == (
        EntryKind.TOPUP,
        Decimal("25.5"),
        Decimal("25.5"),
    )


@pytest.mark.django_db
def test_create_org_with_zdr_holds_every_call_and_is_named_after_its_slug() -> None:
    assert run("create_org", "initech", "--zdr") == (
        "initech: created, balance 0.00 USD, zdr hold on\n"
    )
    initech = Organization.objects.get(slug="initech")
    assert (initech.name, initech.zdr_hold) == ("initech", True)
    assert not LedgerEntry.objects.exists()


@pytest.mark.django_db
def test_create_org_refuses_a_slug_already_taken(acme: Organization) -> None:
    assert refusal("create_org", "acme") == "organization 'acme' already exists"
    assert Organization.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["Acme", "acme corp", "_acme", "acme!", "a" * 51])
def test_create_org_refuses_what_is_not_a_slug(slug: str) -> None:
    assert refusal("create_org", slug) == (
        f"'{slug}' is not a slug: use lowercase letters, digits, - and _"
    )
    assert not Organization.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("credits", "message"),
    [
        ("ten", "'ten' is not an amount of USD"),
        ("nan", "'nan' is not an amount of USD"),
        ("1e12", "'1e12' is not an amount of USD"),
        ("0.0000000001", "'0.0000000001' has more than 9 decimal places"),
        ("-5", "credits must not be negative"),
    ],
)
def test_create_org_refuses_bad_credits(credits: str, message: str) -> None:
    assert refusal("create_org", "initech", "--credits", credits) == message
    assert not Organization.objects.exists()
