"""Access tokens for Google service accounts: the service account JSON (Momor's key for a
Vertex provider, or a saved key) exchanged for an OAuth token with google-auth, cached per
secret and refreshed a few minutes before it expires. The exchange is blocking HTTP, so it
runs in a thread, one at a time per secret.

A saved service account is written by an organization's admin, so its `token_uri` is not
trusted: it must be Google's token endpoint (`configure` sets it; tests point it at the fake),
and the exchange goes through the outbound-address guard (`gateway.outbound`), follows no
redirect, and never lets the endpoint's answer into an error: a failed exchange is reported by
its status alone."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import http.client
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.auth import transport
from google.auth.exceptions import GoogleAuthError, RefreshError, TransportError
from google.oauth2 import service_account

from gateway.outbound import Network, OutboundRefused, post

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
REFRESH_MARGIN = dt.timedelta(minutes=5)
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"  # noqa: S105 - a URL, not a secret
TOKEN_TIMEOUT_SECONDS = 10.0
TOKEN_ANSWER_MAX_BYTES = 64 * 1024
CACHED_ACCOUNTS = 1024


class CredentialsError(Exception):
    """The service account could not be read or its token could not be had; `refused` when
    Google's token endpoint turned it down (as opposed to not answering). The message holds
    nothing the endpoint answered."""

    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True, slots=True)
class TokenEndpoint:
    url: str = GOOGLE_TOKEN_URL
    allowed: tuple[Network, ...] = ()


@dataclass
class Account:
    credentials: service_account.Credentials
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_endpoint = TokenEndpoint()
_accounts: dict[str, Account] = {}


def configure(url: str, allowed: tuple[Network, ...]) -> None:
    """The one token endpoint service accounts may name, and the networks the guard lets
    through besides public addresses."""
    global _endpoint
    _endpoint = TokenEndpoint(url, allowed)
    forget()


def service_account_info(secret: str) -> dict[str, Any]:
    try:
        info = orjson.loads(secret)
    except orjson.JSONDecodeError as exc:
        raise CredentialsError("the key is not a service account JSON", refused=True) from exc
    if not isinstance(info, dict) or not all(
        isinstance(info.get(k), str) for k in ("client_email", "private_key", "token_uri")
    ):
        raise CredentialsError("the key is not a service account JSON", refused=True)
    if info["token_uri"] != _endpoint.url:
        raise CredentialsError(
            f"the service account's token_uri is not Google's token endpoint ({_endpoint.url})",
            refused=True,
        )
    return info


async def access_token(secret: str, info: dict[str, Any]) -> str:
    """A token valid for at least REFRESH_MARGIN, exchanged anew only when needed."""
    account = _account(secret, info)
    token = _fresh(account.credentials)
    if token:
        return token
    async with account.lock:
        token = _fresh(account.credentials)
        if token:
            return token
        await asyncio.to_thread(_refresh, account.credentials)
        return str(account.credentials.token)


def _account(secret: str, info: dict[str, Any]) -> Account:
    # Keyed on the whole secret: two accounts sharing an email and key id never share a token.
    key = hashlib.sha256(secret.encode()).hexdigest()
    account = _accounts.get(key)
    if account is None:
        if len(_accounts) >= CACHED_ACCOUNTS:
            del _accounts[next(iter(_accounts))]
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
    except (ValueError, GoogleAuthError):
        message = "the service account's private key is unusable"
        raise CredentialsError(message, refused=True) from None


def _fresh(credentials: service_account.Credentials) -> str | None:
    expiry = credentials.expiry
    if not credentials.token or expiry is None:
        return None
    # google-auth keeps expiry as a naive UTC datetime.
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return str(credentials.token) if expiry - now > REFRESH_MARGIN else None


def _refresh(credentials: service_account.Credentials) -> None:
    request = GuardedRequest(_endpoint)
    try:
        credentials.refresh(request)  # type: ignore[no-untyped-call]
    except TransportError:
        raise CredentialsError("the token endpoint could not be called", refused=False) from None
    except RefreshError as exc:
        # google-auth marks a 5xx or an unreachable endpoint as retryable.
        refused = not getattr(exc, "retryable", False)
        status = f" (HTTP {request.last_status})" if request.last_status else ""
        raise CredentialsError(f"the token exchange failed{status}", refused=refused) from None


class _Answer(transport.Response):
    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self._status, self._headers, self._data = status, headers, data

    @property
    def status(self) -> int:
        return self._status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    @property
    def data(self) -> bytes:
        return self._data


class GuardedRequest(transport.Request):
    """google-auth's transport for one token exchange: the configured endpoint alone, through
    the outbound guard, no redirect followed."""

    def __init__(self, endpoint: TokenEndpoint) -> None:
        self.endpoint = endpoint
        self.last_status = 0

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> transport.Response:
        if url != self.endpoint.url or method != "POST":
            raise TransportError("only the token endpoint may be called")  # type: ignore[no-untyped-call]
        try:
            reply = post(
                url, body or b"", dict(headers or {}),
                timeout=timeout or TOKEN_TIMEOUT_SECONDS, max_bytes=TOKEN_ANSWER_MAX_BYTES,
                allowed=self.endpoint.allowed,
            )  # fmt: skip
        except (OutboundRefused, OSError, http.client.HTTPException) as exc:
            raise TransportError(type(exc).__name__) from None  # type: ignore[no-untyped-call]
        self.last_status = reply.status
        return _Answer(reply.status, reply.headers, reply.body)


def forget() -> None:
    """Drop every cached token (tests)."""
    _accounts.clear()
