"""The tests' password hasher: Django's PBKDF2 with few iterations. A hash names its own count,
so the servers the tests start (on Django's default hashers) verify it as they would any
other, and rehash it at its first sign-in. Django's own count, a million, cost each user made
and each sign-in about a second on a slow core."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewIterations(PBKDF2PasswordHasher):
    iterations = 1_000
