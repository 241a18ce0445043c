"""Secrets at rest: API keys as hashes; provider keys (saved and Momor's own) encrypted with
MOMOR_ENCRYPTION_KEY, a Fernet key used as it is, or a passphrase stretched with scrypt.

Every provider key decrypted or encrypted here is noted in `core.redaction.KNOWN`, so the
log filter masks it wherever it would show."""

from __future__ import annotations

import base64
import functools
import hashlib
import secrets
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.views.decorators.debug import sensitive_variables

from core.redaction import note_secret

API_KEY_PREFIX = "sk-momor-"
VISIBLE_PREFIX_LENGTH = len(API_KEY_PREFIX) + 6


def new_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    """API keys carry 256 bits of randomness, so one SHA-256 is as strong as a slow hash."""
    return hashlib.sha256(key.encode()).hexdigest()


def visible_prefix(key: str) -> str:
    return key[:VISIBLE_PREFIX_LENGTH]


# The passphrase form of MOMOR_ENCRYPTION_KEY is stretched with scrypt (OWASP's N=2^16, r=8,
# p=2) under the deployment's salt; each ciphertext names the salt it was made with.
PASSPHRASE_PREFIX = "scrypt1$"  # noqa: S105 - a format marker, not a secret
SCRYPT = {"n": 2**16, "r": 8, "p": 2}


def _material() -> str:
    material: str = settings.ENCRYPTION_KEY
    if not material:
        raise ImproperlyConfigured("MOMOR_ENCRYPTION_KEY is required to store provider keys")
    return material


def _as_fernet_key(material: str) -> Fernet | None:
    """The key itself when MOMOR_ENCRYPTION_KEY is a Fernet key (used as it is)."""
    try:
        return Fernet(material)
    except ValueError:
        return None


@functools.lru_cache(maxsize=8)
def _derived(material: str, salt: str) -> Fernet:
    kdf = Scrypt(salt=base64.urlsafe_b64decode(salt), length=32, **SCRYPT)
    return Fernet(base64.urlsafe_b64encode(kdf.derive(material.encode())))


def _legacy(material: str) -> Fernet:
    """The derivation of ciphertexts written before scrypt (one SHA-256 of the passphrase):
    read only; `reencrypt_secrets` rewrites them."""
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(material.encode()).digest()))


@sensitive_variables("plain")
def encrypt_secret(plain: str, *, salt: Callable[[], str]) -> str:
    """Encrypt a provider key. `salt()` gives the deployment's salt (accounts.models keeps it
    in the database); it is asked for only when MOMOR_ENCRYPTION_KEY is a passphrase."""
    note_secret(plain)
    material = _material()
    fernet = _as_fernet_key(material)
    if fernet is not None:
        return fernet.encrypt(plain.encode()).decode()
    made_with = salt()
    sealed = _derived(material, made_with).encrypt(plain.encode()).decode()
    return f"{PASSPHRASE_PREFIX}{made_with}${sealed}"


class UnreadableSecret(ImproperlyConfigured):
    """A stored provider key that the current MOMOR_ENCRYPTION_KEY cannot decrypt (the key was
    rotated, or the row was copied from another deployment)."""


@sensitive_variables("plain")
def decrypt_secret(token: str) -> str:
    material = _material()
    try:
        plain = _reader(material, token).decrypt(_body(token).encode()).decode()
    except (InvalidToken, ValueError):
        raise UnreadableSecret(
            "A stored provider key cannot be decrypted: MOMOR_ENCRYPTION_KEY has changed"
        ) from None
    note_secret(plain)
    return plain


def is_current(token: str) -> bool:
    """Whether the ciphertext is written the way `encrypt_secret` writes it now."""
    return token.startswith(PASSPHRASE_PREFIX) == (_as_fernet_key(_material()) is None)


def _reader(material: str, token: str) -> Fernet:
    if token.startswith(PASSPHRASE_PREFIX):
        return _derived(material, token.removeprefix(PASSPHRASE_PREFIX).split("$", 1)[0])
    return _as_fernet_key(material) or _legacy(material)


def _body(token: str) -> str:
    return token.rsplit("$", 1)[-1]


def readable(token: str) -> bool:
    """Whether a stored secret decrypts with the current key."""
    try:
        decrypt_secret(token)
    except UnreadableSecret:
        return False
    return True
