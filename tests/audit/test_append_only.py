"""The audit trail on PostgreSQL: an UPDATE or a DELETE of a row fails; the retention's purge
deletes the rows older than the retention and no others. A secret's change is kept as
"changed", never its value."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.utils import timezone

from accounts.models import Organization, SavedKey
from audit.actors import Actor
from audit.models import AuditEvent
from audit.retention import audit_purge
from audit.trail import audited
from gateway.models import Model
from tests.ui_helpers import signed_in


def _event(**fields: object) -> AuditEvent:
    return AuditEvent.objects.create(
        actor_kind="command", actor="create_org (by ops)", action="create", **fields
    )


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_auditevent SET actor = 'someone else'",
        "DELETE FROM audit_auditevent",
    ],
)
def test_the_database_refuses_to_change_or_delete_an_event(db: None, statement: str) -> None:
    _event(at=timezone.now() - timedelta(days=3650))
    refused = pytest.raises(DatabaseError, match="the audit trail is append-only")
    with refused, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)
    assert AuditEvent.objects.get().actor == "create_org (by ops)"


def test_the_purge_deletes_only_events_older_than_the_retention(db: None) -> None:
    old = _event(at=timezone.now() - timedelta(days=400))
    recent = _event(at=timezone.now() - timedelta(days=300))
    assert audit_purge(365) == 1
    assert list(AuditEvent.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not AuditEvent.objects.filter(pk=old.pk).exists()


def test_a_purge_setting_younger_than_a_day_deletes_nothing(db: None) -> None:
    _event(at=timezone.now() - timedelta(hours=2))
    moment = timezone.now().isoformat()
    refused = pytest.raises(DatabaseError, match="append-only")
    with refused, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('momor.audit_purge_before', %s, true)", [moment])
        cursor.execute("DELETE FROM audit_auditevent")
    assert AuditEvent.objects.count() == 1


def test_a_secret_reads_changed_and_the_other_fields_their_values(acme: Organization) -> None:
    saved = SavedKey(organization=acme, provider="azure", label="first")
    saved.set_secret("sk-first-secret-0123456789")
    saved.save()
    with audited(Actor.command("save_provider_key"), "save", saved):
        saved.set_secret("sk-second-secret-9876543210")
        saved.label = "second"
        saved.save()
    event = AuditEvent.objects.get()
    assert event.changes == {
        "label": ["first", "second"],
        "secret_encrypted": "changed",
        "suffix": ["6789", "3210"],
    }
    assert event.organization_id == acme.pk
    assert "sk-first" not in str(event.changes) and "sk-second" not in str(event.changes)


def test_owners_and_admins_read_and_export_the_trail_members_do_not(
    acme: Organization, alice: User, bob: User
) -> None:
    owner = signed_in(alice)
    owner.post("/policy/", {"zdr_hold": "on"})
    page = owner.get("/audit/", {"action": "update", "days": "7"})
    assert page.status_code == 200
    assert [(e.actor, e.action, e.changes) for e in page.context["page"]] == [
        ("alice", "update", {"zdr_hold": [False, True]})
    ]
    export = owner.get("/audit/export.csv", {"actor": "ali"})
    lines = b"".join(export.streaming_content).decode().splitlines()
    assert lines[0].startswith("at,actor_kind,actor,action,object_type")
    assert len(lines) == 2 and ",user,alice,update,accounts.organization," in lines[1]
    assert signed_in(bob).get("/audit/").status_code == 403
    assert Client().get("/audit/").status_code == 302


def test_a_field_that_only_names_tokens_keeps_its_values(db: None) -> None:
    model = Model.objects.create(id="acme/small", max_output_tokens=1000)
    with audited(Actor.command("load_catalog"), "update", model):
        Model.objects.filter(pk=model.pk).update(max_output_tokens=2000)
    assert AuditEvent.objects.get().changes == {"max_output_tokens": [1000, 2000]}


def test_the_export_quotes_what_a_spreadsheet_would_run(acme: Organization, alice: User) -> None:
    AuditEvent.objects.create(
        organization_id=acme.pk,
        actor_kind="user",
        actor="=HYPERLINK(1)",
        action="update",
        user_agent="@agent",
    )
    export = signed_in(alice).get("/audit/export.csv")
    row = b"".join(export.streaming_content).decode().splitlines()[1]
    assert row.startswith(f"{AuditEvent.objects.get().at.isoformat()},user,'=HYPERLINK(1),update,")
    assert row.endswith(",'@agent")
