"""Attacker-style: a management key that expires tries to outlive itself. A management key
cannot widen its own or any key's rights or life: it tightens its own limits and expiry only,
sets no expiry past its own on any key (nor lifts one), and a key it creates expires no later
than it does (at the same moment when no expiry is asked for)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import ApiKey, KeyKind, Role
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import manage, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(gateway: str) -> Any:
    return make_org("acme")


@pytest.fixture
def hour(acme: Any) -> datetime:
    return timezone.now() + timedelta(hours=1)


@pytest.fixture
def ops(acme: Any, hour: datetime) -> tuple[str, ApiKey]:
    """Alice's management key, which expires in an hour."""
    alice = person("alice", acme, Role.OWNER)
    return make_key(
        acme, name="ops", kind=KeyKind.MANAGEMENT, created_by=alice, expires_at=hour, rate_limit=5
    )


def iso(moment: datetime) -> str:
    return moment.isoformat()


def keys_besides(*names: str) -> list[str]:
    return sorted(ApiKey.objects.exclude(name__in=names).values_list("name", flat=True))


@pytest.mark.parametrize(
    "change",
    [
        {"expires_at": None},
        {"expires_at": "2099-01-01T00:00:00Z"},
        {"rate_limit": None},
        {"rate_limit": 6},
        {"credit_limit": "1"},
    ],
    ids=["lift-expiry", "postpone", "lift-rate", "raise-rate", "set-credit-from-none"],
)
def test_a_management_key_cannot_widen_its_own_limits_or_life(
    gateway: str, ops: tuple[str, ApiKey], change: dict[str, Any]
) -> None:
    plain, row = ops
    before = (row.expires_at, row.rate_limit, row.credit_limit)
    response = manage(gateway, plain, "PATCH", f"keys/{row.pk}/", json=change)
    if "credit_limit" in change:  # none to any: a tightening, allowed
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 403, response.text
    row.refresh_from_db()
    assert (row.expires_at, row.rate_limit, row.credit_limit) == before


def test_a_management_key_tightens_its_own_life(
    gateway: str, ops: tuple[str, ApiKey], hour: datetime
) -> None:
    plain, row = ops
    sooner = hour - timedelta(minutes=30)
    answer = manage(gateway, plain, "PATCH", f"keys/{row.pk}/", json={"expires_at": iso(sooner)})
    assert answer.status_code == 200, answer.text
    row.refresh_from_db()
    assert row.expires_at == sooner


@pytest.mark.parametrize("kind", [KeyKind.INFERENCE, KeyKind.MANAGEMENT])
def test_what_a_management_key_creates_expires_with_it(
    gateway: str, ops: tuple[str, ApiKey], hour: datetime, kind: str
) -> None:
    plain, _ = ops
    created = manage(gateway, plain, "POST", "keys/", json={"name": "child", "kind": kind})
    assert created.status_code == 201, created.text
    assert ApiKey.objects.get(name="child").expires_at == hour
    later = {"name": "later", "kind": kind, "expires_at": iso(hour + timedelta(seconds=1))}
    refused = manage(gateway, plain, "POST", "keys/", json=later)
    assert refused.status_code == 403, refused.text
    assert "no expiry later than its own" in refused.json()["detail"]
    assert keys_besides("ops") == ["child"]


def test_a_management_key_sets_no_expiry_past_its_own_on_any_key(
    gateway: str, acme: Any, ops: tuple[str, ApiKey], hour: datetime
) -> None:
    plain, _ = ops
    _, other = make_key(acme, name="other", expires_at=hour + timedelta(days=30))
    path = f"keys/{other.pk}/"
    for expiry in [None, iso(hour + timedelta(days=60))]:
        answer = manage(gateway, plain, "PATCH", path, json={"expires_at": expiry})
        assert answer.status_code == 403, answer.text
    tighter = hour + timedelta(days=10)  # still past its own, but sooner than the key's
    answer = manage(gateway, plain, "PATCH", path, json={"expires_at": iso(tighter)})
    assert answer.status_code == 200, answer.text
    other.refresh_from_db()
    assert other.expires_at == tighter


def test_a_management_key_that_never_expires_makes_keys_that_never_expire(
    gateway: str, acme: Any
) -> None:
    plain, _ = make_key(acme, name="ops", kind=KeyKind.MANAGEMENT)
    created = manage(gateway, plain, "POST", "keys/", json={"name": "child"})
    assert created.status_code == 201, created.text
    assert ApiKey.objects.get(name="child").expires_at is None
