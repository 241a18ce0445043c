"""What one completions call costs each store, measured over real calls on a Redis of the
test's own (so its counters are this test's alone): Redis commands and bytes, database rows.
docs/scaling.md quotes these figures; the budgets below keep them true."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.apps import apps

from billing.admission import select
from billing.recording import drain
from tests.billing.conftest import HI, World
from tests.stores import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 40


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


def commands(client: redis.Redis) -> dict[str, int]:
    stats: dict[str, Any] = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def traffic(client: redis.Redis) -> tuple[int, int]:
    stats: dict[str, Any] = client.info("stats")
    return int(stats["total_net_input_bytes"]), int(stats["total_net_output_bytes"])


def test_what_a_call_costs_redis_and_the_database(world: World, own_redis: RedisServer) -> None:
    body = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 50}
    assert world.post(body).status_code == 200  # the balance is loaded, the groups made
    assert drain()
    client = redis.Redis.from_url(own_redis.url)
    client.config_resetstat()
    before_rows = rows()

    for _ in range(CALLS):
        assert world.post(body).status_code == 200
    assert drain()
    used = commands(client)
    bytes_in, bytes_out = traffic(client)
    added = {table: n - before_rows[table] for table, n in rows().items() if n != before_rows[table]}

    per_call = {name: round(count / CALLS, 2) for name, count in sorted(used.items())}
    print(json.dumps({  # noqa: T201 - the figures docs/scaling.md quotes
        "redis_commands_per_call": per_call,
        "redis_bytes_in_per_call": bytes_in // CALLS,
        "redis_bytes_out_per_call": bytes_out // CALLS,
        "rows_per_call": {table: n / CALLS for table, n in added.items()},
    }, indent=1))  # fmt: skip
    # the hot path: one admission script and one settle script per call
    assert per_call["xadd"] == 1  # one record each, appended by the settle script
    assert per_call["evalsha"] <= 5
    assert bytes_in // CALLS < 8_000
    assert added == {
        "billing_generation": CALLS,
        "billing_attempt": CALLS,
        "billing_ledgerentry": CALLS,
    }
