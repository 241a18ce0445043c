"""The live feed of a stored batch, over a real channels_redis layer: every generation reaches
its organization's listeners, in order, sent from one event loop whose connections serve every
batch; a Redis that is down or never answers neither fails storing nor holds it up for longer
than the Redis time-out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.db import connections

from accounts.models import Organization
from billing.calls.records import CallRecord, record_payload
from billing.models import Generation
from billing.storing.store import records_store
from core.breaker import REDIS
from tests.billing.records import a_record
from tests.stores import RedisServer
from tests.ui_helpers import signed_in

REFUSED = "redis://127.0.0.1:9/0"


def layer_on(settings: Any, url: str) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}
    }


@pytest.fixture
def redis_layer(settings: Any) -> None:
    """The Channels layer on the test Redis (the cache's, never a cluster)."""
    if not settings.MOMOR_CACHE_REDIS_URL:
        pytest.skip("needs a Redis (REDIS_URL)")
    layer_on(settings, settings.MOMOR_CACHE_REDIS_URL)


@pytest.fixture
def feed_redis(settings: Any) -> Iterator[RedisServer]:
    """A Redis of the test's own for the Channels layer alone."""
    server = RedisServer(durable=False)
    server.start()
    layer_on(settings, server.url)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def own_connections() -> Any:
    """Close the database connections that sync_to_async's thread opened for the test."""
    yield
    await sync_to_async(connections.close_all)()


async def feed_of(user: Any) -> WebsocketCommunicator:
    from momor.asgi import application

    cookie = (await sync_to_async(signed_in)(user)).cookies[django_settings.SESSION_COOKIE_NAME]
    headers = [
        (b"origin", b"http://localhost"),
        (b"host", b"localhost"),
        (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie.value}".encode()),
    ]
    communicator = WebsocketCommunicator(application, "/ws/generations/", headers=headers)
    assert (await communicator.connect())[0]
    return communicator


async def received(listener: WebsocketCommunicator, count: int) -> list[str]:
    messages = [await listener.receive_json_from(timeout=5) for _ in range(count)]
    return [message["generation"]["request_id"] for message in messages]


def stored(records: list[CallRecord]) -> int:
    return Generation.objects.filter(request_id__in=[r.request_id for r in records]).count()


def breaker_opened(within: float = 2.0) -> bool:
    """Whether the breaker opens (a send still under way when storing stopped waiting may be
    the one to open it)."""
    deadline = time.monotonic() + within
    while REDIS.closed and time.monotonic() < deadline:
        time.sleep(0.02)
    return not REDIS.closed


@pytest.mark.django_db(transaction=True)
async def test_a_stored_batch_reaches_each_organizations_listeners_in_order(
    alice: Any,
    mallory: Any,
    acme: Organization,
    globex: Organization,
    redis_layer: None,
    own_connections: None,
) -> None:
    alices, mallorys = await feed_of(alice), await feed_of(mallory)
    records = [a_record(acme.pk) for _ in range(7)]
    records[2:2] = [a_record(globex.pk), a_record(globex.pk)]

    await sync_to_async(records_store)([record_payload(r) for r in records])

    acmes = [r.request_id for r in records if r.organization_id == acme.pk]
    globexes = [r.request_id for r in records if r.organization_id == globex.pk]
    assert await received(alices, len(acmes)) == acmes
    assert await received(mallorys, len(globexes)) == globexes
    assert await alices.receive_nothing(timeout=0.3)
    assert await mallorys.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await mallorys.disconnect()


@pytest.mark.django_db
def test_batches_share_one_loop_and_its_connections(
    acme: Organization, feed_redis: RedisServer
) -> None:
    client = redis.Redis(port=feed_redis.port)
    opened = int(client.info("stats")["total_connections_received"])
    batches = [[a_record(acme.pk) for _ in range(10)] for _ in range(3)]

    for batch in batches:
        records_store([record_payload(r) for r in batch])

    # this client's own, and one of the feed's (the sends of a batch go one after another)
    assert int(client.info("stats")["total_connections_received"]) - opened <= 2
    assert REDIS.closed
    client.close()


@pytest.mark.django_db
def test_a_refusing_redis_neither_fails_nor_holds_up_storing(
    acme: Organization, settings: Any
) -> None:
    settings.MOMOR_REDIS_TIMEOUT_SECONDS = 1
    layer_on(settings, REFUSED)
    records = [a_record(acme.pk) for _ in range(20)]

    started = time.monotonic()
    records_store([record_payload(r) for r in records])

    assert time.monotonic() - started < 2  # the time-out and the wait's grace, at most
    assert stored(records) == 20
    assert breaker_opened()  # by the feed


@pytest.mark.django_db
def test_a_redis_that_never_answers_holds_storing_up_one_time_out_at_most(
    acme: Organization, feed_redis: RedisServer, settings: Any
) -> None:
    settings.MOMOR_REDIS_TIMEOUT_SECONDS = 1
    records = [a_record(acme.pk) for _ in range(20)]
    feed_redis.freeze()
    try:
        started = time.monotonic()
        records_store([record_payload(r) for r in records])
        took = time.monotonic() - started
    finally:
        feed_redis.thaw()

    assert took < 2.5  # one send's time-out and the wait's grace, not 20 time-outs
    assert stored(records) == 20
    assert breaker_opened()
