"""A webhook's signature: HMAC-SHA256 with the endpoint's secret over the moment it was sent
and the exact body, so a receiver checks both that Momor sent it and that it is fresh.

    Momor-Signature: t=1765000000,v1=<64 hex digits>

The signed bytes are the timestamp, a dot and the body: `b"1765000000." + body`."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - a format marker, not a secret
TOLERANCE_SECONDS = 300
"""How old a signature a receiver should still accept (docs/alerts.md)."""


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header(secret: str, timestamp: int, body: bytes) -> str:
    """The Momor-Signature header's value."""
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify(secret: str, value: str, body: bytes, now: int) -> bool:
    """Whether a Momor-Signature header signs `body` with `secret` within the tolerance."""
    parts = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        return False
    return hmac.compare_digest(parts.get("v1", ""), signature(secret, timestamp, body))
