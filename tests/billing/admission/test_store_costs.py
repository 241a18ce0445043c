"""What one completions call costs each store, measured over real calls on a Redis of the
test's own (so its counters are this test's alone): Redis commands, the time Redis spent in
them, bytes, and database rows. What the consumers and refreshers do on their own clock is
measured over an idle window first and taken off. docs/scaling.md quotes these figures; the
budgets below keep them true."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from django.apps import apps

from billing.admission import select
from billing.recording.hand_off import drain
from tests.billing.conftest import HI, World
from tests.stores import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 200
CLIENTS = 8
IDLE_SECONDS = 5.0
BODY = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 50}


@pytest.fixture
def own_redis(settings: Any) -> Iterator[RedisServer]:
    server = RedisServer(durable=True)
    server.start()
    settings.REDIS_URL = server.url
    select.store.cache_clear()
    try:
        yield server
    finally:
        server.close()
        select.store.cache_clear()


def rows() -> dict[str, int]:
    return {
        model._meta.db_table: model.objects.count()
        for model in apps.get_app_config("billing").get_models()
    }


def counters(client: redis.Redis) -> dict[str, float]:
    """Each command's calls and microseconds (`<command>.usec`), and the traffic."""
    found: dict[str, float] = {}
    for name, value in client.info("commandstats").items():
        found[name.removeprefix("cmdstat_")] = value["calls"]
        found[name.removeprefix("cmdstat_") + ".usec"] = value["usec"]
    stats: dict[str, Any] = client.info("stats")
    found["bytes_in"] = stats["total_net_input_bytes"]
    found["bytes_out"] = stats["total_net_output_bytes"]
    return found


def window(client: redis.Redis, work: Any) -> tuple[dict[str, float], float]:
    client.config_resetstat()
    started = time.monotonic()
    work()
    return counters(client), time.monotonic() - started


def calls(world: World) -> None:
    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(lambda _: world.post(BODY).status_code, range(CALLS)))
    assert answers == [200] * CALLS
    assert drain(timeout=60)


def test_what_a_call_costs_redis_and_the_database(world: World, own_redis: RedisServer) -> None:
    assert world.post(BODY).status_code == 200  # the balance is loaded, the groups made
    assert drain()
    client = redis.Redis.from_url(own_redis.url)
    idle, idle_for = window(client, lambda: time.sleep(IDLE_SECONDS))
    before = rows()
    busy, busy_for = window(client, lambda: calls(world))
    added = {table: n - before[table] for table, n in rows().items() if n != before[table]}

    scale = busy_for / idle_for
    per_call = {
        name: round(max(count - idle.get(name, 0) * scale, 0) / CALLS, 2)
        for name, count in sorted(busy.items())
    }
    print(json.dumps({  # noqa: T201 - the figures docs/scaling.md quotes
        "calls_per_second": round(CALLS / busy_for, 1),
        "per_call": {name: value for name, value in per_call.items() if value},
        "idle_per_second": {name: round(n / idle_for, 1) for name, n in sorted(idle.items()) if n},
        "rows_per_call": {table: n / CALLS for table, n in added.items()},
    }, indent=1))  # fmt: skip
    assert busy["xadd"] == CALLS  # one record each, appended by the settle script
    assert per_call["evalsha"] <= 3.5  # admit and settle, and the ledger's announcement
    assert per_call["bytes_in"] < 8_000
    assert added == {
        "billing_generation": CALLS,
        "billing_attempt": CALLS,
        "billing_ledgerentry": CALLS,
    }
