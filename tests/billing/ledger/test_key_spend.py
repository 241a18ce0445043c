"""A key's spend, which its credit limit is held to, is the ledger's for the key plus the charges
Redis holds for it that the ledger does not have yet: a journal replay of a call whose charge
is posted counts it once, and what the journal stored straight into the database while Redis
was down counts once Redis is back."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from billing.admission import select
from billing.admission.redis_store import RedisStore
from billing.calls.cost import to_units
from billing.calls.records import record_from_payload
from billing.ledger.admission_sync import admission_sync
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from billing.recording.replay import REPLAYER
from billing.recording.settlement import settlement_of
from core.breaker import REDIS
from core.redis_keys import org_group, org_key, records_stream
from gateway.catalog.state import STATE
from tests.billing.conftest import HI, World
from tests.billing.recording.test_redis_outage import own_redis, wait_served_by_redis  # noqa: F401 - own_redis, a fixture
from tests.conftest import make_key
from tests.redis_helpers import shared_client
from tests.stores import RedisServer, wait_until

FORTY = {"prompt_tokens": 0, "completion_tokens": 4}  # $0.00004 on gpt-5


def ask(max_tokens: int = 100) -> dict[str, Any]:
    return {"model": "openai/gpt-5", "messages": HI, "max_tokens": max_tokens}


def redis_spent(org_id: int, key_id: int) -> int:
    client = shared_client()
    spent = client.get(org_key(org_id, "adm", "spent", f"k{key_id}"))
    assert isinstance(spent, bytes), spent
    return int(spent)


def handed_off_payload(org_id: int, request_id: str) -> bytes:
    """The record of a call as its settle appended it to the records stream."""
    client = shared_client()
    for _, fields in client.xrange(records_stream(org_group(org_id))) or []:
        payload = (fields or {}).get(b"r")
        if isinstance(payload, bytes) and orjson.loads(payload)["request_id"] == request_id:
            return payload
    raise AssertionError(f"the record of {request_id} is not in the stream")


def test_a_journal_replay_of_a_posted_charge_counts_it_once(
    world: World, tmp_path: Path, settings: Any
) -> None:
    """The record of a call stored and charged already is replayed from a journal (its hand-off
    went through after its time-out, as a process that died had journaled it)."""
    key, row = make_key(world.org, name="limited", credit_limit=Decimal(1))
    world.fake.script("gpt-5", usage=FORTY)
    served = world.post(ask(), key=key)
    assert served.status_code == 200, served.text
    request_id = served.headers["x-momor-request-id"]
    payload = handed_off_payload(world.org.pk, request_id)
    assert drain()
    forty = to_units(Decimal("0.00004"))
    assert redis_spent(world.org.pk, row.pk) == forty

    (tmp_path / "99999-1.journal").write_bytes(payload + b"\n")
    settings.MOMOR_JOURNAL_DIR = tmp_path
    assert REPLAYER.replay() is True
    assert drain()

    assert redis_spent(world.org.pk, row.pk) == forty
    assert select.store().unposted(world.org.pk) == {}
    assert LedgerEntry.objects.filter(idempotency_key=f"charge:{request_id}").count() == 1
    assert Generation.objects.filter(request_id=request_id).count() == 1


def test_spend_stored_while_redis_was_down_counts_against_the_key_once_it_is_back(
    world: World,
    own_redis: RedisServer,  # noqa: F811 - the fixture
) -> None:
    """A key limited to $0.15: $0.09 spent on the process's own counters while Redis is down,
    stored straight into the database from the journal. Back on Redis, the refresher's next
    tick brings the key's spend to the ledger's, and a call that may cost $0.10 more is past
    the limit."""
    key, row = make_key(world.org, name="limited", credit_limit=Decimal("0.15"))
    world.fake.script("gpt-5", usage=FORTY)
    assert world.post(ask(), key=key).status_code == 200  # Redis holds the key's spend
    assert drain()
    own_redis.kill()
    world.fake.script("gpt-5", usage={"prompt_tokens": 0, "completion_tokens": 9_000})
    during = world.post(ask(max_tokens=10_000), key=key)
    assert during.status_code == 200, during.text
    stored = Generation.objects.filter(request_id=during.headers["x-momor-request-id"])
    wait_until(stored.exists, 20, "the journal storing the call made during the outage")
    own_redis.start()
    wait_served_by_redis(world)
    wait_until(lambda: REDIS.closed, 10, "the gateway back on Redis")

    STATE.refresh_now()  # the refresher's first tick back on Redis
    assert redis_spent(world.org.pk, row.pk) == to_units(Decimal("0.09004"))
    refused = world.post(ask(max_tokens=10_000), key=key)

    assert refused.status_code == 402, refused.text
    assert refused.json()["error"] == {
        "message": "This key has reached its credit limit.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_credits",
    }
    # The refusal's record is stored before the test ends: the database is emptied after it,
    # and a write under the emptying deadlocks.
    recorded = Generation.objects.filter(request_id=refused.headers["x-momor-request-id"])
    wait_until(recorded.exists, 20, "the refused call's record stored")


def test_the_refreshers_reconcile_counts_a_charge_settled_twice_once(world: World) -> None:
    """A replay whose settle reaches Redis just after the charge was posted (between its look
    at the ledger and its settle) holds it again: the next reconcile takes it back out."""
    key, row = make_key(world.org, name="limited", credit_limit=Decimal(1))
    world.fake.script("gpt-5", usage=FORTY)
    served = world.post(ask(), key=key)
    assert served.status_code == 200, served.text
    payload = handed_off_payload(world.org.pk, served.headers["x-momor-request-id"])
    assert drain()
    shared = select.store()
    assert isinstance(shared, RedisStore)
    shared.hand_off_many([settlement_of(record_from_payload(orjson.loads(payload)))], 0)
    forty = to_units(Decimal("0.00004"))
    assert redis_spent(world.org.pk, row.pk) == 2 * forty

    admission_sync([world.org.pk], reconcile=True)

    assert redis_spent(world.org.pk, row.pk) == forty
    assert shared.unposted(world.org.pk) == {}
