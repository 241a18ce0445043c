"""Access tokens for Google service accounts: the service account JSON (Momor's key for a
Vertex provider, or a saved key) exchanged for an OAuth token with google-auth, cached per
account and refreshed a few minutes before it expires. The exchange is blocking HTTP, so it
runs in a thread, one at a time per account."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.auth.exceptions import GoogleAuthError, RefreshError, TransportError
from google.auth.transport.requests import Request
from google.oauth2 import service_account

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
REFRESH_MARGIN = dt.timedelta(minutes=5)


class CredentialsError(Exception):
    """The service account could not be read or its token could not be had; `refused` when
    Google's token endpoint turned it down (as opposed to not answering)."""

    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass
class Account:
    credentials: service_account.Credentials
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_accounts: dict[tuple[str, str], Account] = {}


def service_account_info(secret: str) -> dict[str, Any]:
    try:
        info = orjson.loads(secret)
    except orjson.JSONDecodeError as exc:
        raise CredentialsError("the key is not a service account JSON", refused=True) from exc
    if not isinstance(info, dict) or not all(
        isinstance(info.get(k), str) for k in ("client_email", "private_key", "token_uri")
    ):
        raise CredentialsError("the key is not a service account JSON", refused=True)
    return info


async def access_token(info: dict[str, Any]) -> str:
    """A token valid for at least REFRESH_MARGIN, exchanged anew only when needed."""
    account = _account(info)
    token = _fresh(account.credentials)
    if token:
        return token
    async with account.lock:
        token = _fresh(account.credentials)
        if token:
            return token
        await asyncio.to_thread(_refresh, account.credentials)
        return str(account.credentials.token)


def _account(info: dict[str, Any]) -> Account:
    key = (str(info["client_email"]), str(info.get("private_key_id") or ""))
    account = _accounts.get(key)
    if account is None:
        account = _accounts[key] = Account(_credentials(info))
    return account


def _credentials(info: dict[str, Any]) -> service_account.Credentials:
    try:
        credentials: service_account.Credentials = (
            service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                info, scopes=SCOPES
            )
        )
        return credentials
    except (ValueError, GoogleAuthError) as exc:
        raise CredentialsError(f"the service account is unusable: {exc}", refused=True) from exc


def _fresh(credentials: service_account.Credentials) -> str | None:
    expiry = credentials.expiry
    if not credentials.token or expiry is None:
        return None
    # google-auth keeps expiry as a naive UTC datetime.
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return str(credentials.token) if expiry - now > REFRESH_MARGIN else None


def _refresh(credentials: service_account.Credentials) -> None:
    try:
        credentials.refresh(Request())  # type: ignore[no-untyped-call]
    except TransportError as exc:
        raise CredentialsError(f"the token endpoint did not answer: {exc}", refused=False) from exc
    except RefreshError as exc:
        # google-auth marks a 5xx or an unreachable endpoint as retryable.
        refused = not getattr(exc, "retryable", False)
        raise CredentialsError(f"the token exchange failed: {exc}", refused=refused) from exc


def forget() -> None:
    """Drop every cached token (tests)."""
    _accounts.clear()
