"""Credentials made ready before an adapter runs: a key that is not itself what a provider takes
is exchanged here (a Vertex service account for an access token), so adapters stay pure."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from accounts.cloud_projects import is_project_id
from gateway.providers.contract import Failure, Target
from gateway.upstream.google_auth import CredentialsError, access_token, service_account_info


@dataclass(frozen=True, slots=True)
class Ready:
    """The target with its credential ready to send, and the secrets made from the key that a
    failure must be scrubbed of."""

    target: Target
    secrets: tuple[str, ...] = ()


class CredentialsFailed(Exception):
    """The key could not be made into a credential: the try fails with this failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


async def ready(api: str, target: Target) -> Ready:
    exchange = EXCHANGES.get(api)
    return Ready(target) if exchange is None else await exchange(target)


async def _service_account(target: Target) -> Ready:
    """The key is a service account JSON: its access token is sent, in its project."""
    try:
        info = service_account_info(target.secret)
        project = _project(info)
        token = await access_token(target.secret, info)
    except CredentialsError as exc:
        # A refused service account fails like a refused key (401); an unreachable token
        # endpoint like an unreachable provider.
        failure = Failure(401 if exc.refused else None, f"Vertex credentials: {exc}")
        raise CredentialsFailed(failure) from exc
    return Ready(replace(target, secret=token, project=project), (token, str(info["private_key"])))


def _project(info: dict[str, Any]) -> str:
    """The account's project, which Vertex's URL carries: a project id as Google makes them."""
    project = info.get("project_id")
    if not is_project_id(project):
        message = "the service account's project_id is not a Google Cloud project id"
        raise CredentialsError(message, refused=True)
    return str(project)


EXCHANGES: dict[str, Callable[[Target], Awaitable[Ready]]] = {"vertex": _service_account}
