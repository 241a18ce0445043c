"""How many calls one Redis shard admits and settles per second of its CPU: the admission and
settle scripts of N calls (a record of the size a call hands off) sent by the gateway's own
store, from CONCURRENCY coroutines, against a Redis of its own; Redis's CPU time over the run
divided by the calls. docs/scaling.md quotes it.

Usage: MOMOR_SECRET_KEY=x python -m bench.store_capacity [--no-aof]
(the append-only file synced on every write, as the chaos suite runs Redis; --no-aof: none)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import django

CALLS = 20_000
CONCURRENCY = 64
RECORD = b"x" * 1_200  # about what one call's record weighs, encoded


def cpu(client: Any) -> float:
    stats = client.info("cpu")
    return float(stats["used_cpu_user"]) + float(stats["used_cpu_sys"])


async def one(store: Any, n: int, org_id: int) -> None:
    from billing.admission.base import AdmitRequest
    from billing.admission.redis_store import Settlement

    now = int(time.time() * 1000)
    request = AdmitRequest(f"r{n}", org_id, "k1", 10, 0, now, 900_000)
    ticket = await store.admit(request)
    await store.hand_off(Settlement(org_id, "k1", ticket, 5, f"call-{n}", RECORD), now)


async def run(store: Any) -> None:
    queue = iter(range(CALLS))

    async def client() -> None:
        for n in queue:
            await one(store, n, 1 + n % 16)

    await asyncio.gather(*(client() for _ in range(CONCURRENCY)))


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
    from tests.stores import RedisServer

    durable = "--no-aof" not in sys.argv
    server = RedisServer(durable=durable)
    server.start()
    os.environ["REDIS_URL"] = server.url
    django.setup()
    import redis

    from billing.admission.redis_store import RedisStore

    try:
        store = RedisStore(server.url)
        for org_id in range(1, 17):
            store.sync_balance(org_id, 10**15, 1)
        client = redis.Redis.from_url(server.url)
        before, started = cpu(client), time.monotonic()
        asyncio.run(run(store))
        spent, took = cpu(client) - before, time.monotonic() - started
        print(json.dumps({
            "calls": CALLS,
            "wall_calls_per_second": round(CALLS / took),
            "redis_cpu_us_per_call": round(spent / CALLS * 1e6, 1),
            "calls_per_redis_cpu_second": round(CALLS / spent),
            "appendfsync": "always" if durable else "no AOF",
        }))  # fmt: skip
    finally:
        server.close()


if __name__ == "__main__":
    main()
