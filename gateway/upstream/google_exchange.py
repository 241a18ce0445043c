"""google-auth's side of a service account's token exchange (see `gateway.upstream.google_auth`,
which imports this module on the first exchange): the account's credentials, and the transport
that lets google-auth call the configured token endpoint alone, through the outbound guard."""

from __future__ import annotations

import http.client
from collections.abc import Mapping
from typing import Any

from google.auth import transport
from google.auth.exceptions import GoogleAuthError, RefreshError, TransportError
from google.oauth2 import service_account

from core.outbound import OutboundRefused, post
from gateway.upstream.google_auth import (
    SCOPES,
    TOKEN_ANSWER_MAX_BYTES,
    TOKEN_TIMEOUT_SECONDS,
    CredentialsError,
    TokenEndpoint,
)


def credentials(info: dict[str, Any]) -> service_account.Credentials:
    try:
        account: service_account.Credentials = (
            service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]  # google-auth leaves it unannotated
                info, scopes=SCOPES
            )
        )
        return account
    except (ValueError, GoogleAuthError):
        message = "the service account's private key is unusable"
        raise CredentialsError(message, refused=True) from None


def refresh(credentials: service_account.Credentials, endpoint: TokenEndpoint) -> None:
    request = GuardedRequest(endpoint)
    try:
        credentials.refresh(request)  # type: ignore[no-untyped-call]  # google-auth leaves it unannotated
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
            raise TransportError("only the token endpoint may be called")  # type: ignore[no-untyped-call]  # google-auth leaves it unannotated
        try:
            reply = post(
                url, body or b"", dict(headers or {}),
                timeout=timeout or TOKEN_TIMEOUT_SECONDS, max_bytes=TOKEN_ANSWER_MAX_BYTES,
                allowed=self.endpoint.allowed,
            )  # fmt: skip
        except (OutboundRefused, OSError, http.client.HTTPException) as exc:
            raise TransportError(type(exc).__name__) from None  # type: ignore[no-untyped-call]  # google-auth leaves it unannotated
        self.last_status = reply.status
        return _Answer(reply.status, reply.headers, reply.body)
