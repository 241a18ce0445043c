"""Invariants of accounts' rows: API keys as hashes, saved keys encrypted, one key per place."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction
from django.test import override_settings
from django.utils import timezone

from accounts.models import ApiKey, Organization, SavedKey
from tests.conftest import make_key

SECRET = "sk-acme-own-openai-secret-0123456789-QzXw"


def _saved_key(org: Organization, provider: str = "openai", secret: str = SECRET) -> SavedKey:
    saved = SavedKey(organization=org, provider=provider)
    saved.set_secret(secret)
    saved.save()
    return saved


def _raw_secret_column(saved: SavedKey) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret_encrypted FROM accounts_savedkey WHERE id = %s", [saved.pk])
        (value,) = cursor.fetchone()
    return str(value)


# API keys


def test_it_stores_an_api_key_only_as_its_hash_and_prefix(acme: Organization) -> None:
    plain, row = make_key(acme, name="ci")
    values = ApiKey.objects.filter(pk=row.pk).values().get()
    assert [name for name, value in values.items() if plain in str(value)] == []
    assert values["key_hash"] == hashlib.sha256(plain.encode()).hexdigest()
    assert values["prefix"] == plain[:15]
    assert values["prefix"].startswith("sk-momor-")


def test_it_finds_an_api_key_by_the_hash_of_the_plain_key(acme: Organization) -> None:
    plain, row = make_key(acme)
    assert ApiKey.objects.get(key_hash=ApiKey.lookup_hash(plain)) == row
    assert ApiKey.objects.filter(key_hash=ApiKey.lookup_hash(plain + "x")).exists() is False


def test_active_keys_exclude_revoked_and_expired_ones(acme: Organization) -> None:
    now = timezone.now()
    _, live = make_key(acme, name="live")
    _, later = make_key(acme, name="later", expires_at=now + timedelta(days=1))
    make_key(acme, name="expired", expires_at=now - timedelta(seconds=1))
    make_key(acme, name="revoked", revoked_at=now)
    active = ApiKey.objects.active().order_by("name")
    assert list(active.values_list("name", flat=True)) == ["later", "live"]
    assert set(active) == {live, later}


@pytest.mark.parametrize(
    ("expires_in", "revoked", "usable"),
    [
        (None, False, True),
        (timedelta(seconds=1), False, True),
        (timedelta(0), False, False),
        (timedelta(seconds=-1), False, False),
        (None, True, False),
        (timedelta(days=1), True, False),
    ],
)
def test_a_key_is_usable_until_it_expires_or_is_revoked(
    acme: Organization, expires_in: timedelta | None, revoked: bool, usable: bool
) -> None:
    now = timezone.now()
    expires_at = None if expires_in is None else now + expires_in
    _, row = make_key(acme, expires_at=expires_at, revoked_at=now if revoked else None)
    assert row.is_usable(now) is usable


def test_revoking_a_key_twice_keeps_the_first_revocation(acme: Organization) -> None:
    _, row = make_key(acme)
    row.revoke()
    first = ApiKey.objects.get(pk=row.pk).revoked_at
    row.revoke()
    assert first is not None
    assert ApiKey.objects.get(pk=row.pk).revoked_at == first
    assert row.is_usable() is False


# Saved keys


def test_it_encrypts_a_saved_key_secret_at_rest(acme: Organization) -> None:
    saved = _saved_key(acme)
    column = _raw_secret_column(saved)
    assert SECRET not in column
    assert "QzXw" not in column
    assert column == saved.secret_encrypted
    assert SavedKey.objects.get(pk=saved.pk).secret == SECRET


def test_it_keeps_the_last_four_characters_of_a_long_secret_only(acme: Organization) -> None:
    assert _saved_key(acme, "openai", SECRET).suffix == "QzXw"
    assert _saved_key(acme, "mistral", "short-key").suffix == ""


def test_two_encryptions_of_one_secret_differ(acme: Organization) -> None:
    first, second = _saved_key(acme, "openai"), _saved_key(acme, "mistral")
    assert first.secret_encrypted != second.secret_encrypted
    assert (first.secret, second.secret) == (SECRET, SECRET)


def test_a_fernet_encryption_key_round_trips_too(acme: Organization) -> None:
    with override_settings(ENCRYPTION_KEY=Fernet.generate_key().decode()):
        saved = _saved_key(acme)
        assert SavedKey.objects.get(pk=saved.pk).secret == SECRET


def test_another_encryption_key_cannot_decrypt_a_saved_key(acme: Organization) -> None:
    saved = _saved_key(acme)
    with (
        override_settings(ENCRYPTION_KEY="another-encryption-key"),
        pytest.raises(ImproperlyConfigured) as error,
    ):
        _ = SavedKey.objects.get(pk=saved.pk).secret
    assert str(error.value) == (
        "A stored provider key cannot be decrypted: MOMOR_ENCRYPTION_KEY has changed"
    )
    assert SECRET not in str(error.value)
    assert error.value.__cause__ is None
    assert error.value.__suppress_context__ is True


def test_it_refuses_to_store_a_secret_without_an_encryption_key(acme: Organization) -> None:
    saved = SavedKey(organization=acme, provider="openai")
    with override_settings(ENCRYPTION_KEY=""), pytest.raises(ImproperlyConfigured) as error:
        saved.set_secret(SECRET)
    assert str(error.value) == "MOMOR_ENCRYPTION_KEY is required to store provider keys"
    assert saved.secret_encrypted == ""


def test_an_organization_saves_one_key_per_provider(acme: Organization) -> None:
    _saved_key(acme, "azure")
    with pytest.raises(IntegrityError), transaction.atomic():
        _saved_key(acme, "azure")
    assert SavedKey.objects.filter(organization=acme).count() == 1


def test_a_region_and_another_organization_each_take_their_own_key(
    acme: Organization, globex: Organization
) -> None:
    _saved_key(acme, "azure")
    _saved_key(acme, "azure@eu")
    _saved_key(globex, "azure")
    rows = SavedKey.objects.order_by("organization__slug", "provider")
    assert [(row.organization.slug, row.provider, row.root) for row in rows] == [
        ("acme", "azure", "azure"),
        ("acme", "azure@eu", "azure"),
        ("globex", "azure", "azure"),
    ]
