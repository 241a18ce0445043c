"""With PostgreSQL refusing connections, every database read on a call's path (its key, its
organization's balance, its key's spend) answers 503 in the spec's error shape, never 500."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
from django.conf import settings
from django.db import connection

from accounts.secrets import hash_api_key
from billing.admission import select
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
