"""The deployment's salt for provider keys encrypted under a passphrase.

Its own module, apart from accounts.models: `accounts.secrets` reads the salt, and the other
models encrypt with `accounts.secrets`, so keeping it there would make the two import each
other. accounts.models re-exports it, and Django finds it there."""

from __future__ import annotations

import base64
import secrets

from django.db import models


class EncryptionSalt(models.Model):
    """The deployment's salt for stretching a passphrase MOMOR_ENCRYPTION_KEY: one row, made
    on first use, read by every process. Each ciphertext also carries the salt it was made
    with, so a lost row loses nothing (the next encryption makes a new one)."""

    salt = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return "encryption salt"


def deployment_salt() -> str:
    """The salt, made by the first process that needs it (16 random bytes, URL-safe base64)."""
    fresh = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode()
    row, _ = EncryptionSalt.objects.get_or_create(pk=1, defaults={"salt": fresh})
    return row.salt
