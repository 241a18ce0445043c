"""X-Request-Id claims: the id a caller sends is its call's, unique within its organization
for as long as records are kept (MOMOR_REQUEST_ID_DAYS). One SET NX in Redis per call, no
database query; while Redis is unreachable, this process's own memory stands in."""

from __future__ import annotations

import time

from django.conf import settings

from core.shared_state import Expiring, Unshared, org_key, shared
from gateway.request.errors import GatewayError, invalid_value

_LOCAL: Expiring[tuple[int, str], str] = Expiring(100_000)


async def request_id_claim(org_id: int, request_id: str, call_id: str) -> bool:
    """Claim the id for this call; False when an earlier call of the organization holds it."""
    ttl = settings.MOMOR_REQUEST_ID_DAYS * 86_400
    key = org_key(org_id, "reqid", request_id)
    claimed = await shared(lambda client: client.set(key, call_id, nx=True, ex=ttl))
    if not isinstance(claimed, Unshared):
        return bool(claimed)
    now = time.time()
    if _LOCAL.get((org_id, request_id), now) is not None:
        return False
    _LOCAL.put((org_id, request_id), call_id, now + ttl)
    return True


def reused(request_id: str) -> GatewayError:
    return invalid_value(
        f"X-Request-Id {request_id} was sent already by an earlier call of this organization; "
        "send a fresh one."
    )


def forget_local() -> None:
    _LOCAL.clear()
