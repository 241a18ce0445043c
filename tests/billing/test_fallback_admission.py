"""While Redis is down, each process admits calls on its own counters: they count what Redis
held when it stopped answering (charges settled there and not yet stored, reservations of
calls under way), the charges of calls Redis admitted that end during the outage, and the
records the journal holds, so that no organization spends past its credit. Redis is a server
of the test's own, killed for real; calls go over HTTP to the gateway."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from accounts.models import Organization
from accounts.redis_keys import org_key
from billing.admission import select
from billing.ledger import ledger_sum
from billing.models import Generation, LedgerEntry
from billing.recording import drain
from gateway.state import STATE
from tests.billing.conftest import HI, World
from tests.conftest import make_key, make_org
from tests.stores import RedisServer, wait_until

CREDIT = Decimal("0.03")
# openai/gpt-5-mini at $0.25 and $2 a million: 10,000 completion tokens reserve and cost about
# $0.02, so the organization's $0.03 covers one such call and not two.
DEAR = {"prompt_tokens": 10, "completion_tokens": 10_000}
DEAR_COST = Decimal("0.0200025")


@pytest.fixture
def redis_server(settings: Any) -> Iterator[RedisServer]:
    """A Redis of the test's own; once it fails, the breaker stays open for the whole test."""
    server = RedisServer(durable=True)
    server.start()
    settings.REDIS_URL = server.url
    settings.MOMOR_BREAKER_COOLDOWN_SECONDS = 60
    select.store.cache_clear()
    try:
        yield server
    finally:
        server.close()
        select.store.cache_clear()


@pytest.fixture
def lean(world: World) -> tuple[Organization, str]:
    """An organization whose credit covers one dear call, and its key."""
    org = make_org("lean", credits=CREDIT)
    key, _ = make_key(org, name="lean")
    return org, key


def dear(**fields: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 10_000, **fields}


def cheap() -> dict[str, Any]:
    return {"model": "openai/gpt-5", "messages": HI, "max_tokens": 100}


class Call(threading.Thread):
    """A call made on a thread of its own, its answer kept."""

    def __init__(self, world: World, body: dict[str, Any], key: str) -> None:
        super().__init__(daemon=True)
        self.world, self.body, self.key = world, body, key
        self.response: httpx.Response | None = None

    def run(self) -> None:
        self.response = self.world.post(self.body, key=self.key)

    def answered(self) -> httpx.Response:
        self.join(30)
        assert self.response is not None, "the call never answered"
        return self.response


def reservations(server: RedisServer, org: Organization) -> int:
    return int(server.client().hlen(org_key(org.pk, "adm", "res")))


def admitted_on_redis_then_down(
    world: World, server: RedisServer, org: Organization, key: str
) -> Call:
    """A dear call admitted on Redis, its provider slow to answer; Redis is killed meanwhile and
    a call of another organization finds it down (the breaker opens)."""
    world.fake.script("gpt-5-mini", usage=DEAR, delay_first_byte=4)
    call = Call(world, dear(), key)
    call.start()
    wait_until(lambda: reservations(server, org) == 1, 10, "the call's reservation in Redis")
    return call


def kill_and_open_the_breaker(world: World, server: RedisServer, call: Call) -> None:
    server.kill()
    assert world.post(cheap()).status_code == 200  # on this process's own counters
    assert call.is_alive(), "the slow call ended before Redis was found down"


def back_and_stored(server: RedisServer, settings: Any) -> None:
    """Redis answers again; every record reaches the database."""
    server.start()
    settings.MOMOR_BREAKER_COOLDOWN_SECONDS = 0.2
    settings.MOMOR_RECORD_IN_GATEWAY = True
    assert drain(timeout=30)


def assert_books(org: Organization, served: list[str]) -> None:
    """One record and one charge per served call, the balance the ledger's sum, within the
    credit."""
    assert Generation.objects.filter(request_id__in=served).count() == len(served)
    keys = [f"charge:{rid}" for rid in served]
    assert LedgerEntry.objects.filter(idempotency_key__in=keys).count() == len(served)
    org.refresh_from_db()
    assert org.balance == ledger_sum(org.pk)
    assert org.balance == CREDIT - DEAR_COST * len(served)
    assert org.balance >= 0


def test_a_call_redis_admitted_that_ends_during_the_outage_counts_against_the_credit(
    world: World, redis_server: RedisServer, lean: tuple[Organization, str], settings: Any
) -> None:
    """Its record waits in the journal for Redis (which holds its reservation): its charge is
    held on this process's counters meanwhile. (No refresh reads Redis's backlog here.)"""
    org, key = lean
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 10})
    STATE.pause()
    first = admitted_on_redis_then_down(world, redis_server, org, key)
    kill_and_open_the_breaker(world, redis_server, first)
    assert first.answered().status_code == 200

    world.fake.script("gpt-5-mini", usage=DEAR)
    second = world.post(dear(), key=key)

    assert second.status_code == 402, second.text
    back_and_stored(redis_server, settings)
    assert_books(org, [first.answered().headers["x-momor-request-id"]])


def test_charges_redis_held_unposted_count_against_the_credit_once_it_is_down(
    world: World, redis_server: RedisServer, lean: tuple[Organization, str], settings: Any
) -> None:
    """A call settled in Redis whose record no consumer has stored yet: the ledger does not
    have its charge when Redis stops answering, and the process's own counters count it."""
    org, key = lean
    settings.MOMOR_RECORD_IN_GATEWAY = False  # the records stream is not consumed
    world.fake.script("gpt-5-mini", usage=DEAR)
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 10})
    first = world.post(dear(), key=key)
    assert first.status_code == 200, first.text
    STATE.refresh_now()
    redis_server.kill()

    second = world.post(dear(), key=key)

    assert second.status_code == 402, second.text
    assert world.post(cheap()).status_code == 200  # another organization is served
    back_and_stored(redis_server, settings)
    assert_books(org, [first.headers["x-momor-request-id"]])


def test_reservations_redis_held_count_against_the_credit_once_it_is_down(
    world: World, redis_server: RedisServer, lean: tuple[Organization, str], settings: Any
) -> None:
    """A call under way, admitted on Redis: its reservation counts on the process's own
    counters once Redis stops answering, and its charge once it ends."""
    org, key = lean
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 10})
    first = admitted_on_redis_then_down(world, redis_server, org, key)
    STATE.refresh_now()
    kill_and_open_the_breaker(world, redis_server, first)

    during = world.post(dear(), key=key)
    assert first.answered().status_code == 200
    world.fake.script("gpt-5-mini", usage=DEAR)
    after = world.post(dear(), key=key)

    assert during.status_code == 402, during.text
    assert after.status_code == 402, after.text
    back_and_stored(redis_server, settings)
    assert_books(org, [first.answered().headers["x-momor-request-id"]])
    assert reservations(redis_server, org) == 0
