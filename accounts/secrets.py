"""Secrets at rest: API keys as hashes, saved provider keys encrypted with MOMOR_ENCRYPTION_KEY."""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

API_KEY_PREFIX = "sk-momor-"
VISIBLE_PREFIX_LENGTH = len(API_KEY_PREFIX) + 6


def new_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    """API keys carry 256 bits of randomness, so one SHA-256 is as strong as a slow hash."""
    return hashlib.sha256(key.encode()).hexdigest()


def visible_prefix(key: str) -> str:
    return key[:VISIBLE_PREFIX_LENGTH]


def _fernet() -> Fernet:
    material = settings.ENCRYPTION_KEY
    if not material:
        raise ImproperlyConfigured("MOMOR_ENCRYPTION_KEY is required to store provider keys")
    try:
        return Fernet(material)
    except ValueError:
        # Any passphrase works: it is stretched to a Fernet key.
        digest = hashlib.sha256(material.encode()).digest()
        return Fernet(base64.urlsafe_b64encode(digest))


def encrypt_secret(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


class UnreadableSecret(ImproperlyConfigured):
    """A stored provider key that the current MOMOR_ENCRYPTION_KEY cannot decrypt (the key was
    rotated, or the row was copied from another deployment)."""


def decrypt_secret(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UnreadableSecret(
            "A stored provider key cannot be decrypted: MOMOR_ENCRYPTION_KEY has changed"
        ) from None


def readable(token: str) -> bool:
    """Whether a stored secret decrypts with the current key."""
    try:
        decrypt_secret(token)
    except UnreadableSecret:
        return False
    return True
