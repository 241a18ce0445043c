"""Attacker-style (an operator's typo is enough): every management command (and the benchmark's
seeding, `python -m bench.seed`) given a value past its column or the calendar answers one line
and exits 1, never a traceback, and stores nothing; and `create_api_key --kind management`
makes a key that works on the management API."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from accounts.models import ApiKey, KeyKind, Organization
from billing.models import DailyRollup, LedgerEntry
from tests.child_process import manage, python
from tests.conftest import make_org

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db: None) -> Organization:
    return make_org("acme", credits=Decimal(100))


def test_create_api_key_makes_a_management_key_that_works_on_the_management_api(
    acme: Organization,
) -> None:
    done = manage("create_api_key", "--org", "acme", "--name", "ops", "--kind", "management")
    assert (done.returncode, done.stderr) == (0, "")
    plain = done.stdout.removesuffix("\n")
    key = ApiKey.objects.get(key_hash=ApiKey.lookup_hash(plain))
    assert (key.kind, key.name, key.created_by) == (KeyKind.MANAGEMENT, "ops", None)
    listed = Client(HTTP_AUTHORIZATION=f"Bearer {plain}").get("/api/manage/keys/")
    assert listed.status_code == 200
    assert [k["name"] for k in listed.json()] == ["ops"]


def stored() -> tuple[Any, ...]:
    balance = Organization.objects.values_list("balance", flat=True).get(slug="acme")
    return ApiKey.objects.count(), LedgerEntry.objects.count(), DailyRollup.objects.count(), balance


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["manage.py", "create_api_key", "--org", "acme", "--kind", "root"],
            "--kind must be inference or management, not 'root'",
        ),
        (
            ["manage.py", "add_credits", "--org", "acme", "999999999"],
            "the balance would be 1000000099.00 USD: a balance stays under 1,000,000,000 USD",
        ),
        (
            ["manage.py", "maintain_records", "--retention-days", "99999999999999999999"],
            "--retention-days must be from 0 to 36,500, not 99999999999999999999",
        ),
        (
            ["manage.py", "maintain_records", "--retention-days", "ten"],
            "--retention-days must be a whole number, not 'ten'",
        ),
        (
            ["-m", "bench.seed", "--org", "acme", "--count", "1", "--days", "9999999999"],
            "--days must be from 1 to 36,500, not 9999999999",
        ),
        (
            ["-m", "bench.seed", "--org", "acme", "--count", "1e3"],
            "--count must be a whole number, not '1e3'",
        ),
        (
            ["manage.py", "backfill_rollups", "--until", "9999-12-31"],
            "--until must be a day between 0002-01-01 and 9998-12-31, not 9999-12-31",
        ),
        (
            ["manage.py", "backfill_rollups", "--since", "yesterday"],
            "--since must be a day, YYYY-MM-DD, not 'yesterday'",
        ),
    ],
    ids=[
        "create_api_key-kind",
        "add_credits-balance",
        "maintain_records-huge",
        "maintain_records-text",
        "bench.seed-days",
        "bench.seed-count",
        "backfill_rollups-until",
        "backfill_rollups-since",
    ],
)
def test_a_value_past_its_bound_is_one_line_and_exit_1(
    acme: Organization, args: list[str], message: str
) -> None:
    before = stored()
    done = python(*args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"CommandError: {message}\n")
    assert stored() == before
