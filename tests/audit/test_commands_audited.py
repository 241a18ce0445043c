"""Every operator command of Momor's apps (and Django's changepassword and createsuperuser,
which Momor audits) that changes state leaves exactly one audit row
naming the command and the system account that ran it. The commands are walked from Django's
registry: a new one fails here until it is audited or listed, with the reason, in
NOT_CHANGES."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command, get_commands

from accounts.models import KeyKind
from audit.models import ActorKind, AuditEvent
from billing.ledger.posting import charge_key, ledger_post
from billing.models import EntryKind
from tests.conftest import make_key
from tests.test_admin import World

APPS = {"accounts", "alerts", "audit", "billing", "gateway", "accounts.sso"}

NOT_CHANGES = {
    "maintain_records": "upkeep: makes partitions and applies the retentions the settings set",
    "backfill_rollups": "rebuilds the daily usage, derived from the records",
    "check_alerts": "fires and sends alerts: what the rules say, no member's or operator's change",
}

CATALOG = """
[[providers]]
name = "mistral"
api = "mistral"
base_url = "https://api.mistral.ai/v1"
key_env = "MISTRAL_API_KEY"
"""


def _refund(world: World, tmp_path: Path) -> list[str]:
    generation = world.generation
    ledger_post(
        organization_id=generation.organization_id,
        kind=EntryKind.CHARGE,
        amount=Decimal("-0.5"),
        idempotency_key=charge_key(generation.request_id),
        generation_id=generation.pk,
    )
    return [generation.request_id]


def _catalog(world: World, tmp_path: Path) -> list[str]:
    path = tmp_path / "catalog.toml"
    path.write_text(CATALOG)
    return [str(path)]


def _revoke(world: World, tmp_path: Path) -> list[str]:
    plain, _ = make_key(world.api_key.organization, kind=KeyKind.INFERENCE)
    return [plain]


RUNS: dict[str, Callable[[World, Path], list[str]]] = {
    "create_org": lambda w, p: ["initech", "--credits", "5"],
    "create_api_key": lambda w, p: ["--org", "acme"],
    "revoke_api_key": _revoke,
    "set_policy": lambda w, p: ["--org", "acme", "--zdr", "on"],
    "save_provider_key": lambda w, p: [
        "--org",
        "acme",
        "--provider",
        "azure@eu",
        "--key-env",
        "AZURE_EU_TEST_KEY",
    ],
    "add_credits": lambda w, p: ["--org", "acme", "5"],
    "refund_call": _refund,
    "load_catalog": _catalog,
    "reencrypt_secrets": lambda w, p: [],
    "scrub_records": lambda w, p: [],
    "createsuperuser": lambda w, p: ["--noinput", "--username", "root", "--email", "r@example.com"],
    "changepassword": lambda w, p: ["alice"],
}


def test_every_command_of_momor_is_audited_or_listed_as_no_change() -> None:
    momor = {name for name, app in get_commands().items() if app in APPS}
    assert momor == RUNS.keys() | NOT_CHANGES.keys()
    assert RUNS.keys() & NOT_CHANGES.keys() == set()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_command_leaves_one_audit_row_naming_it(
    name: str,
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_EU_TEST_KEY", "sk-acme-eu-secret-0123456789")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-new-pass-456!")
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "a-new-pass-456!")
    args = RUNS[name](world, tmp_path)
    before = AuditEvent.objects.count()
    call_command(name, *args, stdout=StringIO())
    rows = list(AuditEvent.objects.order_by("id")[before:])
    assert [(row.actor_kind, row.actor.split(" (by ")[0]) for row in rows] == [
        (ActorKind.COMMAND, name)
    ]
    assert rows[0].address is None


def test_changepassword_keeps_only_that_the_password_changed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "a-new-pass-456!")
    call_command("changepassword", "alice", stdout=StringIO())
    event = AuditEvent.objects.get()
    assert (event.action, event.object_repr, event.changes) == (
        "change_password",
        "alice",
        {"password": "changed"},
    )
