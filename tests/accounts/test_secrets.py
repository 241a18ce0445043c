"""Provider keys at rest: a passphrase MOMOR_ENCRYPTION_KEY is stretched with scrypt under the
deployment's salt (stored in the database, so every process derives the same key); a Fernet
key is used as it is; ciphertexts written under the old passphrase derivation still decrypt,
and `reencrypt_secrets` rewrites them."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from django.conf import settings
from django.test import override_settings

from accounts.models import EncryptionSalt, Organization, SavedKey
from alerts.models import WebhookEndpoint
from gateway.models import Provider
from tests.child_process import manage

SECRET = "sk-acme-own-openai-secret-0123456789-QzXw"
MOMOR_SECRET = "sk-momor-resold-openai-key-9876543210-PvKy"


def legacy_ciphertext(plain: str) -> str:
    """A ciphertext as Momor wrote it before scrypt: one SHA-256 of the passphrase as key."""
    digest = hashlib.sha256(settings.ENCRYPTION_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest)).encrypt(plain.encode()).decode()


def scrypt_fernet(salt: str) -> Fernet:
    """The key docs/security.md documents: scrypt (N=2^16, r=8, p=2) of the passphrase and salt."""
    kdf = Scrypt(salt=base64.urlsafe_b64decode(salt), length=32, n=2**16, r=8, p=2)
    return Fernet(base64.urlsafe_b64encode(kdf.derive(settings.ENCRYPTION_KEY.encode())))


def saved(org: Organization, secret: str = SECRET, provider: str = "openai") -> SavedKey:
    row = SavedKey(organization=org, provider=provider)
    row.set_secret(secret)
    row.save()
    return row


@pytest.mark.django_db(transaction=True)
def test_a_passphrase_is_stretched_with_scrypt_under_the_stored_salt(acme: Organization) -> None:
    ciphertext = saved(acme).secret_encrypted
    marker, salt, token = ciphertext.split("$")
    assert marker == "scrypt1"
    assert salt == EncryptionSalt.objects.get().salt
    assert len(base64.urlsafe_b64decode(salt)) == 16
    assert scrypt_fernet(salt).decrypt(token.encode()).decode() == SECRET
    old = base64.urlsafe_b64encode(hashlib.sha256(settings.ENCRYPTION_KEY.encode()).digest())
    with pytest.raises(InvalidToken):
        Fernet(old).decrypt(token.encode())


@pytest.mark.django_db(transaction=True)
def test_another_process_derives_the_same_key(acme: Organization) -> None:
    Provider.objects.create(name="openai", api="openai", base_url="https://api.openai.com/v1")
    ours = saved(acme, provider="openai@nowhere").secret_encrypted
    args = ["--org", "acme", "--provider", "openai", "--key-env", "MOMOR_PROVIDER_KEY_ACME"]
    done = manage("save_provider_key", *args, MOMOR_PROVIDER_KEY_ACME=MOMOR_SECRET)
    assert done.returncode == 0, done.stderr
    theirs = SavedKey.objects.get(provider="openai")
    assert theirs.secret == MOMOR_SECRET
    assert theirs.secret_encrypted.split("$")[1] == ours.split("$")[1]


@pytest.mark.django_db
def test_a_fernet_key_is_used_as_it_is(acme: Organization) -> None:
    key = Fernet.generate_key().decode()
    with override_settings(ENCRYPTION_KEY=key):
        row = saved(acme)
        assert Fernet(key).decrypt(row.secret_encrypted.encode()).decode() == SECRET
        assert SavedKey.objects.get(pk=row.pk).secret == SECRET


@pytest.mark.django_db
def test_a_key_written_under_the_old_derivation_still_decrypts(acme: Organization) -> None:
    row = SavedKey.objects.create(
        organization=acme, provider="openai", secret_encrypted=legacy_ciphertext(SECRET)
    )
    assert SavedKey.objects.get(pk=row.pk).secret == SECRET


@pytest.mark.django_db(transaction=True)
def test_reencrypt_secrets_rewrites_old_ciphertexts(acme: Organization) -> None:
    old = SavedKey.objects.create(
        organization=acme, provider="openai", secret_encrypted=legacy_ciphertext(SECRET)
    )
    current = saved(acme, provider="mistral")
    provider = Provider.objects.create(
        name="openai", api="openai", base_url="https://api.openai.com/v1",
        key_encrypted=legacy_ciphertext(MOMOR_SECRET),
    )  # fmt: skip
    hook = WebhookEndpoint.objects.create(
        organization=acme, url="https://hooks.example/momor",
        secret_encrypted=legacy_ciphertext("whsec_old"),
    )  # fmt: skip
    done = manage("reencrypt_secrets")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "saved keys: 1 re-encrypted, 1 already current\n"
        "Momor's provider keys: 1 re-encrypted, 0 already current\n"
        "webhook secrets: 1 re-encrypted, 0 already current\n"
    )
    hook.refresh_from_db()
    assert hook.secret_encrypted.startswith("scrypt1$") and hook.secret() == "whsec_old"
    old.refresh_from_db()
    provider.refresh_from_db()
    assert old.secret_encrypted.startswith("scrypt1$") and old.secret == SECRET
    assert provider.key_encrypted.startswith("scrypt1$")
    assert provider.stored_key() == MOMOR_SECRET
    assert SavedKey.objects.get(pk=current.pk).secret_encrypted == current.secret_encrypted
    again = manage("reencrypt_secrets")
    assert again.stdout.startswith("saved keys: 0 re-encrypted, 2 already current\n")
