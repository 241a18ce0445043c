"""While Redis is down, each process admits calls on its own counters: they count what Redis
held when it stopped answering (charges settled there and not yet stored, reservations of
calls under way), the charges of calls Redis admitted that end during the outage, and the
records the journal holds, so that no organization spends past its credit. Redis is a server
of the test's own, killed for real; calls go over HTTP to the gateway."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounts.models import Organization
from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from billing.recording.replay import REPLAYER
from core.breaker import REDIS
from core.redis_keys import org_key
from gateway.catalog.state import STATE
from tests.billing.conftest import HI, World, child_env, redis_of_its_own
from tests.conftest import make_key, make_org
from tests.processes import Gateway
from tests.stores import RedisServer, wait_until

CREDIT = Decimal("0.03")
# openai/gpt-5-mini at $0.25 and $2 a million: 10,000 completion tokens reserve and cost about
# $0.02, so the organization's $0.03 covers one such call and not two.
DEAR = {"prompt_tokens": 10, "completion_tokens": 10_000}
DEAR_COST = Decimal("0.0200025")


@pytest.fixture
def redis_server(settings: Any) -> Iterator[RedisServer]:
    """A Redis of the test's own; once it fails, the breaker stays open for the whole test."""
    with redis_of_its_own(settings, cooldown=60) as server:
        yield server


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


def post(url: str, body: dict[str, Any], key: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


class Call(threading.Thread):
    """A call made on a thread of its own, its answer kept."""

    def __init__(self, url: str, body: dict[str, Any], key: str) -> None:
        super().__init__(daemon=True)
        self.url, self.body, self.key = url, body, key
        self.response: httpx.Response | None = None

    def run(self) -> None:
        self.response = post(self.url, self.body, self.key)

    def answered(self) -> httpx.Response:
        self.join(30)
        assert self.response is not None, "the call never answered"
        return self.response


def reservations(server: RedisServer, org: Organization) -> int:
    return int(server.client().hlen(org_key(org.pk, "adm", "res")))


def admitted_on_redis_then_down(
    world: World, server: RedisServer, org: Organization, key: str, url: str = ""
) -> Call:
    """A dear call admitted on Redis, its provider slow to answer; Redis is killed meanwhile and
    a call of another organization finds it down (the breaker opens)."""
    world.fake.script("gpt-5-mini", usage=DEAR, delay_first_byte=4)
    call = Call(url or world.url, dear(), key)
    call.start()
    wait_until(lambda: reservations(server, org) == 1, 10, "the call's reservation in Redis")
    return call


def kill_and_open_the_breaker(world: World, server: RedisServer, call: Call) -> None:
    server.kill()
    assert post(call.url, cheap(), world.key).status_code == 200  # on the process's own counters
    assert call.is_alive(), "the slow call ended before Redis was found down"


def back_and_stored(server: RedisServer, settings: Any) -> None:
    """Redis answers again and the gateway finds it so; every record reaches the database."""
    server.start()
    settings.MOMOR_BREAKER_COOLDOWN_SECONDS = 0.2
    settings.MOMOR_RECORD_IN_GATEWAY = True
    wait_until(lambda: REDIS.closed, 10, "the gateway back on Redis")
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


def test_calls_admitted_during_the_outage_are_stored_though_records_before_them_wait(
    world: World, redis_server: RedisServer, lean: tuple[Organization, str], settings: Any
) -> None:
    """The record of a call Redis admitted waits in the journal until Redis settles its
    reservation; the calls admitted on the process's own counters after it, in later segments,
    reach the database during the outage all the same."""
    org, key = lean
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 10})
    first = admitted_on_redis_then_down(world, redis_server, org, key)
    kill_and_open_the_breaker(world, redis_server, first)
    waiting = first.answered().headers["x-momor-request-id"]
    REPLAYER.replay()  # its segment is closed: the next record starts another

    later = world.post(cheap())

    assert later.status_code == 200, later.text
    stored = Generation.objects.filter(request_id=later.headers["x-momor-request-id"])
    wait_until(stored.exists, 10, "the later call stored while Redis is down")
    assert not Generation.objects.filter(request_id=waiting).exists()
    back_and_stored(redis_server, settings)
    assert_books(org, [waiting])


def test_a_gateway_restarted_during_the_outage_counts_what_its_journal_holds(
    world: World, redis_server: RedisServer, lean: tuple[Organization, str], settings: Any,
    tmp_path: Path,
) -> None:  # fmt: skip
    """A call Redis admitted ends during the outage and its gateway is killed; the gateway
    started in its place, Redis still down, holds that call's charge from the journal before
    its first call."""
    org, key = lean
    world.fake.script("gpt-5", usage={"prompt_tokens": 10, "completion_tokens": 10})
    journal = tmp_path / "journal"
    env = child_env(MOMOR_JOURNAL_DIR=str(journal), MOMOR_BREAKER_COOLDOWN_SECONDS="60")
    gateways = [Gateway(env, tmp_path / "before.log")]
    try:
        gateways[0].wait_ready()
        first = admitted_on_redis_then_down(world, redis_server, org, key, gateways[0].url)
        kill_and_open_the_breaker(world, redis_server, first)
        assert first.answered().status_code == 200
        gateways[0].kill()
        gateways.append(Gateway(env, tmp_path / "after.log"))
        gateways[1].wait_ready()
        world.fake.script("gpt-5-mini", usage=DEAR)

        second = post(gateways[1].url, dear(), key)

        assert second.status_code == 402, second.text
    finally:
        for gateway in gateways:
            gateway.close()
    settings.MOMOR_JOURNAL_DIR = journal  # this process adopts what they left
    back_and_stored(redis_server, settings)
    assert_books(org, [first.answered().headers["x-momor-request-id"]])
