"""With Redis unreachable (refusing, stopped, or blackholed: accepting connections and never
answering), the gateway keeps serving within seconds on this process's own counters, kept in
step with the ledger, and its journal; records reach the database once the stores answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from billing.admission import select
from billing.ledger.posting import ledger_post, ledger_sum
from billing.live.publish import publish_generation
from billing.models import EntryKind, Generation, LedgerEntry
from billing.recording.hand_off import drain
from core.breaker import REDIS
from core.redis_keys import org_key
from gateway.catalog.state import STATE
from tests.billing.conftest import HI, World, redis_of_its_own
from tests.conftest import make_key, make_org
from tests.redis_helpers import shared_client
from tests.stores import RedisServer

CLOSED = "redis://127.0.0.1:9/0"


def test_a_call_is_served_and_recorded_while_redis_is_down(
    world: World, settings: SettingsWrapper
) -> None:
    settings.REDIS_URL = CLOSED
    select.store.cache_clear()
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 100})

    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 100})

    assert response.status_code == 200, response.text
    assert drain()
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.cost == Decimal("0.001012500")  # 10 x 1.25 + 100 x 10 per million
    assert select.local_store().open_reservations(world.org.pk, 2**62) == {}


def test_credit_is_still_enforced_while_redis_is_down(
    world: World, settings: SettingsWrapper
) -> None:
    settings.REDIS_URL = CLOSED
    select.store.cache_clear()
    poor = make_org("poor", credits=Decimal("0.001"))
    key, _ = make_key(poor)

    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 10_000}, key=key)

    assert response.status_code == 402, response.text
    assert response.json()["error"]["code"] == "insufficient_credits"


@pytest.fixture
def own_redis(settings: Any) -> Iterator[RedisServer]:
    """A Redis of the test's own, which the gateway (in this process) uses from now on."""
    with redis_of_its_own(settings, cooldown=0.3) as server:
        yield server


def ask(max_tokens: int = 100, **fields: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-5", "messages": HI, "max_tokens": max_tokens, **fields}


def test_the_fallback_store_follows_the_ledger_from_one_outage_to_the_next(
    world: World, own_redis: RedisServer
) -> None:
    world.fake.script("gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10})
    assert world.post(ask()).status_code == 200
    own_redis.kill()
    assert world.post(ask()).status_code == 200  # served on this process's own counters
    own_redis.start()
    wait_served_by_redis(world)
    # the organization spends all but a tenth of a cent elsewhere
    world.org.refresh_from_db()
    ledger_post(
        organization_id=world.org.pk,
        kind=EntryKind.ADJUSTMENT,
        amount=Decimal("0.001") - world.org.balance,
    )
    STATE.refresh_now()

    own_redis.kill()
    response = world.post(ask(max_tokens=10_000))  # may cost $0.1: more than is left

    assert response.status_code == 402, response.text
    assert response.json()["error"]["code"] == "insufficient_credits"


def wait_served_by_redis(world: World, timeout: float = 10.0) -> None:
    """Until a call is admitted by Redis again (the breaker has let a probe through)."""
    client = shared_client()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert world.post(ask()).status_code == 200
        if client.exists(org_key(world.org.pk, "adm", "balance")):
            return
        time.sleep(0.1)
    raise AssertionError("the gateway never went back to Redis")


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_calls_answer_within_seconds_while_redis_is_blackholed(
    world: World, own_redis: RedisServer
) -> None:
    world.fake.script("gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10})
    assert world.post(ask()).status_code == 200
    own_redis.freeze()  # accepts connections, answers nothing
    try:
        answered = [timed(lambda: world.post(ask())) for _ in range(2)]
        answered += [timed(lambda: world.stream(ask())) for _ in range(2)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            answered += list(pool.map(lambda _: timed(lambda: world.post(ask())), range(8)))
    finally:
        own_redis.thaw()

    assert [r.status_code for r, _ in answered] == [200] * 12  # on the fallbacks
    assert max(took for _, took in answered) < 6
    assert all(r.text.endswith("data: [DONE]\n\n") for r, _ in answered[2:4])
    assert drain(timeout=30)  # the journal goes to the database once the stores answer
    ids = [r.headers["x-momor-request-id"] for r, _ in answered]
    assert Generation.objects.filter(request_id__in=ids).count() == 12
    assert LedgerEntry.objects.filter(organization=world.org, kind="charge").count() == 13
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
    assert select.store().open_reservations(world.org.pk, int(time.time() * 1000)) == {}


def test_the_live_feed_gives_up_within_seconds_on_a_blackholed_redis(
    world: World, own_redis: RedisServer, settings: Any
) -> None:
    settings.MOMOR_REDIS_TIMEOUT_SECONDS = 1
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [own_redis.url]},
        }
    }
    generation = Generation.objects.create(
        request_id="live-1", organization=world.org, status="success", created_at=timezone.now()
    )
    own_redis.freeze()
    try:
        publisher = threading.Thread(target=publish_generation, args=(generation,), daemon=True)
        started = time.monotonic()
        publisher.start()
        publisher.join(10)
        took = time.monotonic() - started
    finally:
        own_redis.thaw()

    assert not publisher.is_alive(), "publishing a record hung on a blackholed Redis"
    assert took < 3.5  # the Redis time-out, whatever the layer's own connection settings


REFUSING = {
    "oom": (
        [("config", "set", "maxmemory-policy", "noeviction"), ("config", "set", "maxmemory", "1")],
        [("config", "set", "maxmemory", "0")],
    ),
    "readonly": ([("replicaof", "127.0.0.1", "1")], [("replicaof", "no", "one")]),
}


@pytest.mark.parametrize("how", list(REFUSING))
def test_a_redis_that_takes_no_writes_opens_the_breaker_as_a_down_one(
    world: World, own_redis: RedisServer, how: str
) -> None:
    """OOM under noeviction, or READONLY (a replica after a failover): Redis answers, every
    write is refused; the gateway uses its fallbacks as it does for a Redis it cannot reach,
    and the records reach the database once Redis takes writes again."""
    world.fake.script("gpt-5", usage={"prompt_tokens": 100, "completion_tokens": 10})
    assert world.post(ask()).status_code == 200
    refuse, take_back = REFUSING[how]
    redis = own_redis.client()
    for command in refuse:
        redis.execute_command(*command)
    try:
        answered = [world.post(ask()), world.stream(ask()), world.post(ask())]
        opened = not REDIS.closed
    finally:
        for command in take_back:
            redis.execute_command(*command)

    assert [r.status_code for r in answered] == [200] * 3
    assert opened, "an error reply that refuses every write must open the breaker"
    assert drain(timeout=30)
    ids = [r.headers["x-momor-request-id"] for r in answered]
    assert Generation.objects.filter(request_id__in=ids).count() == 3
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
