"""The admission stores' arithmetic, the same for Redis (shared by every process) and this
process's own: reserve, refuse, settle, post, expire."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from pytest_django.fixtures import Settings as SettingsWrapper
from redis.cluster import RedisCluster

from billing.admission import Limit, NeedBalance, NeedSpend, Refused
from billing.admission.base import AdmissionStore, AdmitRequest, KeySpend
from billing.admission.local import LocalStore
from billing.admission.redis_store import RedisStore, advance_keys
from tests.redis_helpers import client, flush, flush_scripts

NOW = 1_790_000_000_000
TTL = 60_000


@pytest.fixture(params=["local", "redis"])
def store(request: pytest.FixtureRequest, settings: SettingsWrapper) -> Iterator[AdmissionStore]:
    if request.param == "local":
        yield LocalStore()
        return
    url = settings.REDIS_URL
    flush(url)
    yield RedisStore(url)
    flush(url)


def ask(
    rid: str,
    amount: int,
    *,
    now: int = NOW,
    key: str = "k1",
    rate: int = 0,
    key_limit: int | None = None,
    budgets: tuple[Limit, ...] = (),
    ttl: int = TTL,
) -> AdmitRequest:
    own = (Limit(key, key_limit),) if key_limit is not None else ()
    return AdmitRequest(rid, 7, key, amount, rate, now, ttl, (*own, *budgets))


async def test_it_asks_for_the_balance_before_anything(store: AdmissionStore) -> None:
    with pytest.raises(NeedBalance):
        await store.admit(ask("r1", 10))


async def test_reservations_hold_credit_until_settled(store: AdmissionStore) -> None:
    store.sync_balance(7, 100, 1)
    first = await store.admit(ask("r1", 60))
    with pytest.raises(Refused) as refused:
        await store.admit(ask("r2", 60))
    assert refused.value.reason == "credits"
    store.settle(first, 25, "call-1", NOW)
    assert store.open_reservations(7, NOW) == {}
    assert store.unposted(7) == {"call-1": 25}
    await store.admit(ask("r3", 75))
    with pytest.raises(Refused):
        await store.admit(ask("r4", 1))


async def test_a_posted_charge_moves_from_unposted_into_the_balance(
    store: AdmissionStore,
) -> None:
    store.sync_balance(7, 100, 1)
    ticket = await store.admit(ask("r1", 50))
    store.settle(ticket, 40, "call-1", NOW)
    store.posted(7, "call-1", 60, 2)
    assert store.unposted(7) == {}
    await store.admit(ask("r2", 60))
    with pytest.raises(Refused):
        await store.admit(ask("r3", 1))


async def test_a_batch_of_posted_charges_clears_each_and_keeps_the_latest_balance(
    store: AdmissionStore,
) -> None:
    """A batch of records posts the charges of several organizations, out of entry order: each
    charge leaves its organization's unposted, and each takes the balance after its latest
    entry."""
    store.sync_balance(7, 100, 1)
    store.sync_balance(8, 50, 1)
    for org, rid, cost in ((7, "a", 10), (7, "b", 20), (8, "c", 5), (7, "d", 30)):
        ticket = await store.admit(AdmitRequest(f"r-{rid}", org, "k1", cost, 0, NOW, TTL))
        store.settle(ticket, cost, rid, NOW)
    store.posted_many([(7, "b", 4, 70), (8, "c", 3, 45), (7, "a", 2, 90)])
    assert (store.unposted(7), store.unposted(8)) == ({"d": 30}, {})
    await store.admit(ask("r1", 40))  # 70 - 30 still unposted
    with pytest.raises(Refused):
        await store.admit(ask("r2", 1))
    await store.admit(AdmitRequest("r3", 8, "k1", 45, 0, NOW, TTL))


def test_an_organizations_posted_charges_go_to_redis_as_one_script(
    settings: SettingsWrapper,
) -> None:
    """A script per charge held Redis, and every gateway's admission behind it, for the whole
    batch."""
    url = settings.REDIS_URL
    flush(url)
    store = RedisStore(url)
    store.sync_balance(7, 1_000, 1)
    for i in range(50):
        ticket = asyncio.run(store.admit(ask(f"r{i}", 10)))
        store.settle(ticket, 10, f"call-{i}", NOW)
    posted = [(7, f"call-{i}", 2 + i, 990 - 10 * i) for i in range(50)]

    scripts = _scripts_run(url, lambda: store.posted_many(posted))

    assert scripts == 1
    assert store.unposted(7) == {}
    flush(url)


def _scripts_run(url: str, action: Callable[[], None]) -> int:
    """The scripts Redis ran on organization 7's keys while `action` ran (MONITOR on the node
    that holds them, up to a marker sent after it)."""
    watcher, marker = _node_of(url, advance_keys(7)[0]), f"done-{uuid.uuid4()}"
    db = watcher.connection_pool.connection_kwargs.get("db", 0)
    count = 0
    with watcher.monitor() as monitor:
        action()
        watcher.echo(marker)
        for command in monitor.listen():
            if command["command"] == f"ECHO {marker}":
                return count
            count += command["db"] == db and command["command"].startswith("EVALSHA ")
    raise AssertionError("the marker never came")


def _node_of(url: str, key: str) -> redis.Redis:
    """A client of the one Redis that holds `key` (a cluster's node of its slot)."""
    found = client(url)
    if not isinstance(found, RedisCluster):
        return found
    node = found.get_node_from_key(key)
    return redis.Redis(host=node.host, port=node.port)


async def test_an_older_balance_never_overwrites_a_newer_one(store: AdmissionStore) -> None:
    store.sync_balance(7, 100, 5)
    store.sync_balance(7, 1_000, 4)
    with pytest.raises(Refused):
        await store.admit(ask("r1", 101))


@pytest.mark.parametrize("store", ["local"], indirect=True)  # Redis reads its own clock
async def test_the_reservation_of_a_process_that_died_expires(store: AdmissionStore) -> None:
    store.sync_balance(7, 100, 1)
    await store.admit(ask("r1", 100))
    with pytest.raises(Refused):
        await store.admit(ask("r2", 100, now=NOW + TTL - 1))
    await store.admit(ask("r3", 100, now=NOW + TTL + 1))
    assert list(store.open_reservations(7, NOW + TTL + 1)) == ["r3"]


@pytest.mark.parametrize("store", ["local"], indirect=True)  # Redis reads its own clock
async def test_a_reservation_held_below_zero_is_released_and_expires(
    store: AdmissionStore,
) -> None:
    """Admission is never asked to reserve below zero now; one held below zero from before is
    still released by its settle or its expiry, rather than failing every script that meets it."""
    store.sync_balance(7, 100, 1)
    settled = await store.admit(ask("r1", -500))
    await store.admit(ask("r2", -500))
    store.settle(settled, 0, "call-1", NOW)
    later = NOW + TTL + 1
    await store.admit(ask("r3", 100, now=later))
    with pytest.raises(Refused):
        await store.admit(ask("r4", 1, now=later))
    assert store.open_reservations(7, later) == {"r3": 100}


@pytest.mark.parametrize("store", ["local"], indirect=True)  # Redis reads its own clock
async def test_a_renewed_reservation_outlives_its_first_time_to_live(
    store: AdmissionStore,
) -> None:
    store.sync_balance(7, 100, 1)
    ticket = await store.admit(ask("r1", 100))
    assert await store.renew(ticket, NOW + TTL - 1, TTL) is True
    with pytest.raises(Refused):
        await store.admit(ask("r2", 100, now=NOW + 2 * TTL - 2))
    assert list(store.open_reservations(7, NOW + 2 * TTL - 2)) == ["r1"]
    assert list(store.open_reservations(7, NOW + 2 * TTL)) == []


@pytest.mark.parametrize("store", ["local"], indirect=True)  # Redis reads its own clock
async def test_a_reservation_settled_or_expired_is_not_renewed(store: AdmissionStore) -> None:
    store.sync_balance(7, 100, 1)
    settled = await store.admit(ask("r1", 10))
    store.settle(settled, 5, "call-1", NOW)
    assert await store.renew(settled, NOW + 1, TTL) is False
    expired = await store.admit(ask("r2", 10))
    assert await store.renew(expired, NOW + TTL, TTL) is False
    assert store.open_reservations(7, NOW + TTL) == {}


async def test_an_unposted_charge_is_held_until_the_ledger_has_it_however_long(
    store: AdmissionStore,
) -> None:
    """Storing may stall for days (PostgreSQL down, no worker): the charge is still held, so
    the credit it took is not spent again."""
    store.sync_balance(7, 100, 1)
    ticket = await store.admit(ask("r1", 100))
    store.settle(ticket, 100, "call-1", NOW)
    month = 30 * 24 * 3600 * 1000
    for later in (24 * 3600 * 1000 + 1, month):
        with pytest.raises(Refused):
            await store.admit(ask(f"r-{later}", 1, now=NOW + later))
    assert store.unposted(7) == {"call-1": 100}
    store.posted(7, "call-1", 0, 2)
    store.sync_balance(7, 100, 3)
    await store.admit(ask("r3", 100, now=NOW + month))


async def test_calls_served_and_posted_one_after_another_leave_nothing_held(
    store: AdmissionStore,
) -> None:
    store.sync_balance(7, 100, 1)
    for i in range(1_000):
        ticket = await store.admit(ask(f"r{i}", 100, now=NOW + i))
        assert await store.renew(ticket, NOW + i, TTL) is True
        store.settle(ticket, 1, f"call-{i}", NOW + i)
        store.posted(7, f"call-{i}", 100, 2 + i)
    assert store.unposted(7) == {}
    assert store.open_reservations(7, NOW + 1_000) == {}
    await store.admit(ask("all-of-it", 100, now=NOW + 1_000))


async def test_a_process_book_forgets_what_it_released() -> None:
    """Its expiry heap is rebuilt from what is still held: a long-running process does not
    keep an entry for every call it ever served."""
    store = LocalStore()
    store.sync_balance(7, 100, 1)
    for i in range(5_000):
        ticket = await store.admit(ask(f"r{i}", 10, now=NOW + i))
        store.settle(ticket, 1, f"call-{i}", NOW + i)
        store.posted(7, f"call-{i}", 100, 2 + i)
    assert len(store._books[7].expiries) <= 64


async def test_a_key_is_held_to_its_own_credit_limit(store: AdmissionStore) -> None:
    store.sync_balance(7, 1_000, 1)
    with pytest.raises(NeedSpend) as missing:
        await store.admit(ask("r1", 10, key_limit=50))
    assert missing.value.meters == ("k1",)
    store.set_key_spend(7, "k1", 30)
    ticket = await store.admit(ask("r1", 10, key_limit=50))
    with pytest.raises(Refused) as refused:
        await store.admit(ask("r2", 15, key_limit=50))
    assert (refused.value.reason, refused.value.meter) == ("budget", "k1")
    store.settle(ticket, 5, "call-1", NOW)
    await store.admit(ask("r3", 15, key_limit=50))
    await store.admit(ask("r4", 10, key="k2"))


DAILY = Limit("k1@d2026-12-06", 50)
NEXT_DAY = Limit("k1@d2026-12-07", 50)
MEMBER = Limit("m3@w2026-11-30", 80)


async def test_a_call_is_held_to_every_budget_over_it_at_once(store: AdmissionStore) -> None:
    """The reservation is held on each meter, the refusal names the one it did not fit, and the
    settle counts the cost on each."""
    store.sync_balance(7, 1_000, 1)
    with pytest.raises(NeedSpend) as missing:
        await store.admit(ask("r1", 10, budgets=(DAILY, MEMBER)))
    assert missing.value.meters == (DAILY.meter, MEMBER.meter)
    store.set_key_spends([KeySpend(7, DAILY.meter, 0), KeySpend(7, MEMBER.meter, 40)])
    first = await store.admit(ask("r1", 30, budgets=(DAILY, MEMBER)))
    assert first.held_on == ("k1", DAILY.meter, MEMBER.meter)
    with pytest.raises(Refused) as refused:
        await store.admit(ask("r2", 20, key="k2", budgets=(MEMBER,)))
    assert (refused.value.reason, refused.value.meter) == ("budget", MEMBER.meter)
    store.settle(first, 5, "call-1", NOW)
    second = await store.admit(ask("r2", 35, key="k2", budgets=(MEMBER,)))
    with pytest.raises(Refused) as refused:
        await store.admit(ask("r3", 46, budgets=(DAILY,)))
    assert refused.value.meter == DAILY.meter
    await store.admit(ask("r3", 45, budgets=(DAILY,)))
    store.settle(second, 35, "call-2", NOW)
    with pytest.raises(Refused):
        await store.admit(ask("r4", 1, key="k2", budgets=(MEMBER,)))


async def test_an_expired_reservation_leaves_every_budget_it_held(store: AdmissionStore) -> None:
    store.sync_balance(7, 1_000, 1)
    store.set_key_spends([KeySpend(7, DAILY.meter, 0)])
    await store.admit(ask("r1", 50, budgets=(DAILY,), now=NOW, ttl=1))
    if isinstance(store, RedisStore):
        await asyncio.sleep(0.01)  # expiries run on Redis's own clock
    await store.admit(ask("r2", 50, budgets=(DAILY,), now=NOW + 10))


async def test_a_windows_meter_is_let_go_once_it_expires(store: AdmissionStore) -> None:
    """A window's meter is held until its expiry (a day past the window's end), then let go, on
    the wall clock in both stores: a process that runs for months does not keep every day's
    meter of every budget, and a call that still names one has it loaded again."""
    store.sync_balance(7, 1_000, 1)
    soon = int(time.time() * 1000) + 300
    store.set_key_spends([KeySpend(7, DAILY.meter, 45, expires_ms=soon)])
    with pytest.raises(Refused):
        await store.admit(ask("r1", 10, budgets=(DAILY,)))
    await asyncio.sleep(0.5)
    store.set_key_spends([KeySpend(7, NEXT_DAY.meter, 0, expires_ms=soon + 86_400_000)])
    with pytest.raises(NeedSpend) as missing:
        await store.admit(ask("r2", 10, budgets=(DAILY, NEXT_DAY)))
    assert missing.value.meters == (DAILY.meter,)
    store.set_key_spends([KeySpend(7, DAILY.meter, 0, expires_ms=soon + 86_400_000)])
    await store.admit(ask("r2", 10, budgets=(DAILY, NEXT_DAY)))


@pytest.mark.parametrize("store", ["local"], indirect=True)  # Redis reads its own clock
async def test_the_rate_window_counts_every_request(store: AdmissionStore) -> None:
    store.sync_balance(7, 1_000, 1)
    first = await store.admit(ask("r1", 1, rate=2))
    assert (first.rate.limit, first.rate.remaining) == (2, 1)
    assert first.rate.reset == (NOW // 60_000 + 1) * 60
    counted = await store.count(7, "k1", 2, NOW)
    assert counted.remaining == 0
    with pytest.raises(Refused) as refused:
        await store.admit(ask("r2", 1, rate=2))
    assert refused.value.reason == "rate"
    later = await store.admit(ask("r3", 1, rate=2, now=NOW + 60_000))
    assert later.rate.remaining == 1


async def test_a_free_call_is_admitted_on_an_overspent_balance(store: AdmissionStore) -> None:
    store.sync_balance(7, -5, 1)
    await store.admit(ask("r1", 0))
    with pytest.raises(Refused):
        await store.admit(ask("r2", 1))


async def test_hundreds_of_calls_at_once_all_reserve_in_the_store(store: AdmissionStore) -> None:
    calls = 200
    store.sync_balance(7, 10 * calls, 1)
    tickets = await asyncio.gather(*(store.admit(ask(f"r{i}", 10)) for i in range(calls)))
    assert len(store.open_reservations(7, NOW)) == calls
    assert all(ticket.shared for ticket in tickets) == isinstance(store, RedisStore)
    with pytest.raises(Refused):
        await store.admit(ask("one-more", 1))


async def test_the_oldest_unposted_charges_come_first(store: AdmissionStore) -> None:
    store.sync_balance(7, 1_000, 1)
    for i in (2, 0, 1):
        ticket = await store.admit(ask(f"r{i}", 10, now=NOW + i))
        store.settle(ticket, 5, f"call-{i}", NOW + i)
    assert store.oldest_unposted(7, 2) == ["call-0", "call-1"]


async def test_redis_that_lost_its_scripts_still_admits_calls_sent_together(
    settings: SettingsWrapper,
) -> None:
    url = settings.REDIS_URL
    flush(url)
    store = RedisStore(url)
    store.sync_balance(7, 1_000, 1)
    await store.admit(ask("before", 1))
    flush_scripts(url)
    tickets = await asyncio.gather(*(store.admit(ask(f"r{i}", 1)) for i in range(5)))
    assert [ticket.id for ticket in tickets] == [f"r{i}" for i in range(5)]
    assert len(store.open_reservations(7, NOW)) == 6
    flush(url)


def redis_ms(store: RedisStore) -> int:
    seconds, micros = store.sync.time()
    return int(seconds) * 1000 + int(micros) // 1000


@pytest.fixture
def shared(settings: SettingsWrapper) -> Iterator[RedisStore]:
    url = settings.REDIS_URL
    flush(url)
    yield RedisStore(url)
    flush(url)


async def test_redis_expires_a_reservation_on_its_own_clock_whatever_the_process_says(
    shared: RedisStore,
) -> None:
    """The process's `now` (an hour ahead here) is not Redis's: the reservation is held for its
    time to live on Redis's clock, then expires."""
    shared.sync_balance(7, 100, 1)
    ahead = redis_ms(shared) + 3_600_000
    await shared.admit(ask("r1", 100, now=ahead, ttl=1_000))
    held_until = redis_ms(shared) + 1_000
    with pytest.raises(Refused):
        await shared.admit(ask("r2", 100, now=ahead))
    while redis_ms(shared) <= held_until:
        await asyncio.sleep(0.01)
    await shared.admit(ask("r3", 100, now=0))
    assert list(shared.open_reservations(7, 0)) == ["r3"]


async def test_redis_renews_a_reservation_on_its_own_clock(shared: RedisStore) -> None:
    shared.sync_balance(7, 100, 1)
    ticket = await shared.admit(ask("r1", 100, ttl=1_000))
    first_expiry = redis_ms(shared) + 1_000
    assert await shared.renew(ticket, 0, 60_000) is True
    while redis_ms(shared) <= first_expiry:
        await asyncio.sleep(0.01)
    with pytest.raises(Refused):
        await shared.admit(ask("r2", 100, now=NOW + 10 * TTL))
    assert list(shared.open_reservations(7, 0)) == ["r1"]


async def test_redis_counts_a_rate_window_on_its_own_clock(shared: RedisStore) -> None:
    """Calls that say they come an hour apart fall in the window Redis's clock is in (a minute
    that has 20 s left, so the three are in one)."""
    while 60_000 - redis_ms(shared) % 60_000 < 20_000:
        await asyncio.sleep(0.2)
    shared.sync_balance(7, 1_000, 1)
    first = await shared.admit(ask("r1", 1, rate=2, now=NOW))
    assert first.rate.reset == (redis_ms(shared) // 60_000 + 1) * 60
    counted = await shared.count(7, "k1", 2, NOW + 3_600_000)
    assert counted.remaining == 0
    with pytest.raises(Refused) as refused:
        await shared.admit(ask("r2", 1, rate=2, now=NOW + 7_200_000))
    assert refused.value.reason == "rate"
    assert refused.value.now_ms is not None
    assert abs(refused.value.now_ms - redis_ms(shared)) < 5_000
