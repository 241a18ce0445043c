"""Access tokens for Google service accounts: the service account JSON (Momor's key for a
Vertex provider, or a saved key) exchanged for an OAuth token with google-auth, cached per
secret and refreshed a few minutes before it expires. The exchange is blocking HTTP, so it
runs in a thread, one at a time per secret.

A saved service account is written by an organization's admin, so its `token_uri` is not
trusted: it must be Google's token endpoint (`configure` sets it; tests point it at the fake),
and the exchange goes through the outbound-address guard (`core.outbound`), follows no
redirect, and never lets the endpoint's answer into an error: a failed exchange is reported by
its status alone. google-auth itself (`gateway.upstream.google_exchange`) is imported on the first
exchange: a gateway that serves no Vertex offering never holds it in memory."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from core.outbound import Network

if TYPE_CHECKING:
    from google.oauth2 import service_account

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
_exchange_module: ModuleType | None = None


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
    exchange = await _exchange()
    account = _account(exchange, secret, info)
    token = _fresh(account.credentials)
    if token:
        return token
    async with account.lock:
        token = _fresh(account.credentials)
        if token:
            return token
        await asyncio.to_thread(exchange.refresh, account.credentials, _endpoint)
        return str(account.credentials.token)


async def _exchange() -> ModuleType:
    global _exchange_module
    if _exchange_module is None:
        # The first import reads google-auth from disk: off the event loop.
        module = "gateway.upstream.google_exchange"
        _exchange_module = await asyncio.to_thread(importlib.import_module, module)
    return _exchange_module


def _account(exchange: ModuleType, secret: str, info: dict[str, Any]) -> Account:
    # Keyed on the whole secret: two accounts sharing an email and key id never share a token.
    key = hashlib.sha256(secret.encode()).hexdigest()
    account = _accounts.get(key)
    if account is None:
        if len(_accounts) >= CACHED_ACCOUNTS:
            del _accounts[next(iter(_accounts))]
        account = _accounts[key] = Account(exchange.credentials(info))
    return account


def _fresh(credentials: service_account.Credentials) -> str | None:
    expiry = credentials.expiry
    if not credentials.token or expiry is None:
        return None
    # google-auth keeps expiry as a naive UTC datetime.
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return str(credentials.token) if expiry - now > REFRESH_MARGIN else None


def forget() -> None:
    """Drop every cached token (tests)."""
    _accounts.clear()
