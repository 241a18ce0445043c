"""With PostgreSQL refusing connections, every database read on a call's path (its key, its
organization's balance, its key's spend) answers 503 in the spec's error shape, never 500; and
once the database is back, a connection it dropped while the gateway held it open costs no
call: the next one connects again and is served."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
from django.conf import settings
from django.db import connection

from accounts.secrets import hash_api_key
from billing.admission import select
from core import dbthread
from gateway.catalog.state import STATE
from tests.billing.conftest import HI, World
from tests.conftest import make_key
from tests.redis_helpers import flush

ASK = {"model": "openai/gpt-5", "messages": HI, "max_tokens": 10}
REFUSING_PORT = "9"  # nothing listens on the discard port


def _terminate_other_backends() -> None:
    """End the connections the gateway's database threads hold open, so their next query
    has to connect again (and meets a database that refuses)."""
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_terminate_backend(pid) {others}")


@contextlib.contextmanager
def _refusing() -> Iterator[None]:
    """New connections go to a port that refuses; this test's own connection stays open."""
    connection.ensure_connection()
    conf: dict[str, Any] = connection.settings_dict
    port = conf["PORT"]
    conf["PORT"] = REFUSING_PORT
    _terminate_other_backends()
    try:
        yield
    finally:
        conf["PORT"] = port


def _assert_503(response: Any, *, a_call: bool = True) -> None:
    assert response.status_code == 503, response.text
    assert bool(response.headers.get("x-momor-request-id")) is a_call
    error = response.json()["error"]
    assert error["type"] == "server_error"
    assert error["message"]


def test_a_balance_that_cannot_be_loaded_is_a_503(world: World) -> None:
    STATE.identities.load_key(hash_api_key(world.key))  # the key is known, its balance is not
    flush(settings.REDIS_URL)
    select.local_store.cache_clear()

    with _refusing():
        response = world.post(ASK)

    _assert_503(response)


def test_a_key_that_cannot_be_looked_up_is_a_503(world: World) -> None:
    with _refusing():
        response = world.post(ASK)

    _assert_503(response)


def test_a_key_spend_that_cannot_be_loaded_is_a_503(world: World) -> None:
    limited, _ = make_key(world.org, name="limited", credit_limit=Decimal(5))
    assert (
        world.post(ASK).status_code == 200
    )  # the balance is known, the limited key's spend is not
    STATE.identities.load_key(hash_api_key(limited))

    with _refusing():
        response = world.post(ASK, key=limited)

    _assert_503(response)


def test_a_generation_that_cannot_be_read_is_a_503(world: World) -> None:
    STATE.identities.load_key(hash_api_key(world.key))

    with _refusing():
        response = httpx.get(
            f"{world.url}/v1/generation",
            params={"id": "0" * 32},
            headers={"authorization": f"Bearer {world.key}"},
            timeout=30,
        )

    _assert_503(response, a_call=False)  # a read of the records, not a call


def _hold_a_connection_on_every_lookup_thread() -> None:
    """Each of the gateway's lookup threads opens its connection (kept open, as CONN_MAX_AGE
    keeps it), all at once so that no thread is left without one."""
    threads = dbthread._lookups._max_workers
    together = threading.Barrier(threads, timeout=10)

    def connect() -> None:
        connection.ensure_connection()
        together.wait()

    jobs = [dbthread._lookups.submit(dbthread._fresh(connect)) for _ in range(threads)]
    for job in jobs:
        job.result(timeout=15)


def _drop_the_gateways_connections() -> None:
    """What a database restart, a failover or an idle-connection reaper does to the
    connections the gateway holds open: their backends end (each waited for, up to 5 s)."""
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_terminate_backend(pid, 5000) {others}")


def test_a_call_after_the_database_dropped_the_gateways_connections_is_served(
    world: World,
) -> None:
    fresh = [make_key(world.org, name=f"fresh {n}")[0] for n in range(3)]
    _hold_a_connection_on_every_lookup_thread()

    _drop_the_gateways_connections()

    for key in fresh:  # a key seen for the first time is looked up in the database
        response = world.post(ASK, key=key)
        assert response.status_code == 200, response.text
