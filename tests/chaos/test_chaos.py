"""Nothing lost, nothing doubled, nothing hangs: real gateways (uvicorn), Celery workers,
PostgreSQL and Redis, hundreds of plain and streamed calls (with no fault, or a worker or a
gateway killed: a mix of the four APIs), and in each other scenario one fault part-way
through. After each, the
books balance, per API too (tests/chaos/books.py)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from tests.chaos.apis import CHAT_ONLY, MIX, Kind
from tests.chaos.books import assert_books_balance, assert_each_api_books, assert_shown_billed_once
from tests.chaos.conftest import ECHO, Deployment
from tests.chaos.load import Outcome, Pool, run_load
from tests.stores import wait_until

pytestmark = pytest.mark.chaos


def load(
    deployment: Deployment,
    pool: Pool,
    fault: Callable[[], None],
    kinds: Sequence[Kind] = CHAT_ONLY,
) -> list[Outcome]:
    outcomes = asyncio.run(run_load(pool, deployment.key, fault, kinds=kinds))
    answered = [o for o in outcomes if o.complete]
    assert len(answered) >= 200, f"only {len(answered)} of {len(outcomes)} calls answered"
    assert {o.kind for o in answered} == set(kinds)  # every kind answered, plain and streamed
    return outcomes


def check(deployment: Deployment, outcomes: list[Outcome]) -> None:
    stores, org = deployment.stores, deployment.org
    assert_books_balance(stores.database_url, stores.redis.url, org, outcomes)
    assert_each_api_books(stores.database_url, org, outcomes, deployment.tokens)


def test_no_fault_answers_and_books_every_call_of_every_api(deployment: Deployment) -> None:
    pool = Pool([deployment.gateway().url, deployment.gateway().url])
    deployment.worker()

    outcomes = load(deployment, pool, lambda: None, MIX)

    assert all(o.complete for o in outcomes)
    check(deployment, outcomes)


def test_a_worker_killed_mid_load_leaves_nothing_behind(deployment: Deployment) -> None:
    pool = Pool([deployment.gateway().url])
    first = deployment.worker()

    def fault() -> None:
        first.kill()
        deployment.worker()  # claims what the first one held, once it has waited long enough

    outcomes = load(deployment, pool, fault, MIX)

    assert all(o.complete for o in outcomes)  # a worker is never on the path of a call
    check(deployment, outcomes)


def test_a_gateway_killed_mid_load_loses_no_answered_call(deployment: Deployment) -> None:
    doomed, other = deployment.gateway("doomed"), deployment.gateway()
    pool = Pool([doomed.url, other.url])
    deployment.worker()

    def fault() -> None:
        doomed.kill()
        pool.urls = [other.url]
        pool.urls = [other.url, deployment.gateway("doomed").url]  # its host comes back

    outcomes = load(deployment, pool, fault, MIX)

    assert any(not o.complete for o in outcomes if o.gateway == doomed.url)
    assert_shown_billed_once(deployment.stores.database_url, outcomes)
    check(deployment, outcomes)


def test_sigkill_mid_stream_delivered_tokens_billed_once(deployment: Deployment) -> None:
    """Streams long enough that the kill finds several mid-way: each whose client saw content
    is billed once, from what it delivered, once its reservation has expired."""
    deployment.answer(
        ECHO, (12, 20), text="word " * 20, chunks=20, chunk_delay=0.05, delay_first_byte=0
    )
    doomed, other = deployment.gateway("doomed"), deployment.gateway()
    pool = Pool([doomed.url, other.url])
    deployment.worker()

    def mid_way() -> bool:
        return any(o.gateway == doomed.url and o.shown for o in list(pool.under_way))

    def fault() -> None:
        # clients alternating plain calls and streams of one length fall into step: calls end
        # in waves, and a kill at the count that starts the fault would find streams only begun
        wait_until(mid_way, 30, "a stream on the doomed gateway showing content")
        doomed.kill()
        pool.urls = [other.url]

    outcomes = load(deployment, pool, fault)

    cut = [o for o in outcomes if o.shown and not o.complete and o.gateway == doomed.url]
    # each outcome as (on the doomed gateway, streamed, status, shown, complete), counted
    seen = Counter((o.gateway == doomed.url, o.kind.streamed, o.status, o.shown, o.complete)
                   for o in outcomes)  # fmt: skip
    assert cut, f"no stream was mid-way when the gateway was killed: {seen}"
    assert_shown_billed_once(deployment.stores.database_url, outcomes)
    check(deployment, outcomes)


def test_a_gateway_stopped_mid_load_finishes_its_calls_first(deployment: Deployment) -> None:
    leaving, staying = deployment.gateway(), deployment.gateway()
    pool = Pool([leaving.url, staying.url])
    deployment.worker()
    exited: list[tuple[int, float]] = []

    def fault() -> None:
        pool.urls = [staying.url]
        started = time.monotonic()
        exited.append((leaving.terminate(), time.monotonic() - started))

    outcomes = load(deployment, pool, fault)

    # uvicorn raises the signal again once it has shut down, to exit as SIGTERM asked
    [(status, took)] = exited
    assert status in (0, -signal.SIGTERM)
    assert took < 15, "calls of a fraction of a second each should not need the grace period"
    assert "shutdown grace period over" not in leaving.output()
    cut = [o for o in outcomes if o.gateway == leaving.url and o.started and not o.complete]
    assert cut == []  # every answer it had begun, it finished
    check(deployment, outcomes)


def test_redis_stopped_and_restarted_mid_load(deployment: Deployment) -> None:
    pool = Pool([deployment.gateway().url, deployment.gateway().url])
    deployment.worker()
    redis = deployment.stores.redis
    down: list[float] = []

    def fault() -> None:
        redis.kill()
        started = time.monotonic()
        time.sleep(3)  # calls go on, on the fallbacks
        redis.start()
        down.append(time.monotonic() - started)

    outcomes = load(deployment, pool, fault)

    assert down and down[0] >= 3
    assert all(o.complete and o.status == 200 for o in outcomes)  # served on the fallbacks
    check(deployment, outcomes)


def test_postgresql_stopped_and_restarted_mid_load(deployment: Deployment) -> None:
    pool = Pool([deployment.gateway().url, deployment.gateway().url])
    deployment.worker()
    postgres = deployment.stores.postgres

    def fault() -> None:
        postgres.stop("fast")
        time.sleep(3)  # calls go on: no database on a warm call's path
        postgres.start()

    outcomes = load(deployment, pool, fault)

    assert all(o.complete and o.status == 200 for o in outcomes)
    check(deployment, outcomes)


def refusing_writes(how: str) -> tuple[list[object], list[object]]:
    """The CONFIG commands that make a Redis answer every write with an error reply, and those
    that take it back: OOM (full, under noeviction) or READONLY (a replica of a master it never
    reaches, which keeps its data)."""
    if how == "oom":
        return (
            [
                ("config", "set", "maxmemory-policy", "noeviction"),
                ("config", "set", "maxmemory", "1"),
            ],
            [("config", "set", "maxmemory", "0")],
        )
    return [("replicaof", "127.0.0.1", "1")], [("replicaof", "no", "one")]


@pytest.mark.parametrize("how", ["oom", "readonly"])
def test_redis_refusing_writes_mid_load(deployment: Deployment, how: str) -> None:
    """Redis up but answering every write with OOM or READONLY is as good as down: the
    gateways use their fallbacks until it takes writes again."""
    pool = Pool([deployment.gateway().url, deployment.gateway().url])
    deployment.worker()
    redis = deployment.stores.redis.client()
    refuse, take_back = refusing_writes(how)

    def fault() -> None:
        for command in refuse:
            redis.execute_command(*command)
        time.sleep(3)  # calls go on, on the fallbacks
        for command in take_back:
            redis.execute_command(*command)

    outcomes = load(deployment, pool, fault)

    failed = [(o.status, o.complete, o.streamed) for o in outcomes if o.status != 200]
    assert failed == [], (failed, [g.output()[-3000:] for g in deployment.gateways])
    assert all(o.complete for o in outcomes)  # served on the fallbacks
    check(deployment, outcomes)
