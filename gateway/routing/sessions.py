"""Sticky sessions: a session stays on the offering and key that last served it while that
one works and passes the call's filters. Shared by every process in Redis (this process's
own memory while Redis is unreachable); a session is forgotten an hour after its last call."""

from __future__ import annotations

import time

from core.shared_state import Expiring, Unshared, org_key, shared
from gateway.routing.candidates import Candidate

SESSION_SECONDS = 3600

_LOCAL: Expiring[tuple[int, str], str] = Expiring(50_000)


def pin_of(candidate: Candidate) -> str:
    return f"{candidate.offering.id}:{candidate.key_source}"


async def session_pin(org_id: int, session_id: str) -> str | None:
    """The offering and key that last served the session (its hour starts again)."""
    key = org_key(org_id, "session", session_id)
    found = await shared(lambda client: client.getex(key, ex=SESSION_SECONDS))
    if isinstance(found, Unshared):
        now = time.monotonic()
        pin = _LOCAL.get((org_id, session_id), now)
        if pin is not None:
            _LOCAL.put((org_id, session_id), pin, now + SESSION_SECONDS)
        return pin
    return found.decode() if isinstance(found, bytes) else None


async def session_moves(org_id: int, session_id: str, pin: str) -> None:
    key = org_key(org_id, "session", session_id)
    done = await shared(lambda client: client.set(key, pin, ex=SESSION_SECONDS))
    if isinstance(done, Unshared):
        _LOCAL.put((org_id, session_id), pin, time.monotonic() + SESSION_SECONDS)


def stick(found: list[Candidate], pin: str | None) -> list[Candidate]:
    """The candidates with the session's own first, if it is still among them."""
    if pin is None:
        return found
    for index, candidate in enumerate(found):
        if pin_of(candidate) == pin:
            return [candidate, *found[:index], *found[index + 1 :]]
    return found


def forget_local() -> None:
    _LOCAL.clear()
