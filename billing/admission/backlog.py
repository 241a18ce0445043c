"""What Redis holds against each organization's balance (its unposted charges and open
reservations), read by every refresh while Redis answers, so that this process's own store
counts it when Redis stops answering: calls admitted on its own counters then leave room for
the spend only Redis knew of."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from billing.admission.local import Backlog
from billing.admission.redis_store import AREA
from core.redis_client import SyncClient
from core.redis_keys import org_key


def backlogs(client: SyncClient, org_ids: Iterable[int]) -> dict[int, Backlog]:
    """Each organization's backlog, in one pipeline."""
    org_ids = list(org_ids)
    pipe = client.pipeline(transaction=False)
    for org_id in org_ids:
        pipe.get(org_key(org_id, AREA, "unptot"))
        pipe.hgetall(org_key(org_id, AREA, "res"))
        pipe.zrange(org_key(org_id, AREA, "resexp"), 0, -1, withscores=True)
    replies: list[Any] = pipe.execute()
    return {org_id: _backlog(*replies[3 * i : 3 * i + 3]) for i, org_id in enumerate(org_ids)}


def _backlog(
    unposted: bytes | None, held: dict[bytes, bytes], expiries: list[tuple[bytes, float]]
) -> Backlog:
    expires = {member.decode(): int(score) for member, score in expiries}
    reserved: dict[str, tuple[int, str, int]] = {}
    for rid, value in held.items():
        amount, tag = value.decode().split(":", 1)
        when = expires.get(rid.decode())
        if when is not None:
            reserved[rid.decode()] = (max(int(amount), 0), tag, when)
    return Backlog(max(int(unposted or 0), 0), reserved)
