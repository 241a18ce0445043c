"""The live feed (billing.live.consumers, at /ws/generations/): a member's socket carries their own
organization's generations only, each in a frame of its own and in the order stored, however
many a batch publishes at once; visitors and other origins are refused, and the in-memory
layer carries records written in another thread."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections

from accounts.models import Organization
from accounts.permissions import SESSION_ORG
from billing.live.publish import PER_MESSAGE, group_name, publish_generation, publish_generations
from tests.ui_helpers import make_generation, signed_in

pytestmark = pytest.mark.django_db


def session_cookie(user: Any, org: Organization | None = None) -> str:
    client = signed_in(user)
    if org is not None:
        session = client.session
        session[SESSION_ORG] = org.pk
        session.save()
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def feed(cookie: str | None, origin: bytes = b"http://localhost") -> WebsocketCommunicator:
    from momor.asgi import application

    headers = [(b"origin", origin), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, "/ws/generations/", headers=headers)


@pytest.fixture
async def own_connections() -> Any:
    """Close the database connections that sync_to_async's thread opened for the test."""
    yield
    await sync_to_async(connections.close_all)()


async def publish(org: Organization, request_id: str) -> None:
    message = {"type": "generations.recorded", "generations": [{"request_id": request_id}]}
    await get_channel_layer().group_send(group_name(org.pk), message)


@pytest.mark.django_db(transaction=True)
async def test_the_feed_carries_only_ones_own_organizations_generations(
    alice: Any, mallory: Any, acme: Organization, globex: Organization, own_connections: None
) -> None:
    alices = await feed(await sync_to_async(session_cookie)(alice))
    # mallory's session names acme: the feed still joins only globex.
    mallorys = await feed(await sync_to_async(session_cookie)(mallory, acme))
    assert (await alices.connect())[0] and (await mallorys.connect())[0]
    await publish(acme, "acme-1")
    assert await alices.receive_json_from(timeout=2) == {"generation": {"request_id": "acme-1"}}
    assert await mallorys.receive_nothing(timeout=0.3)
    await publish(globex, "globex-1")
    assert await mallorys.receive_json_from(timeout=2) == {"generation": {"request_id": "globex-1"}}
    assert await alices.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await mallorys.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_feed_refuses_visitors_and_foreign_pages(
    alice: Any, own_connections: None
) -> None:
    anonymous = await feed(None)
    assert (await anonymous.connect())[0] is False
    foreign = await feed(await sync_to_async(session_cookie)(alice), origin=b"http://evil.example")
    assert (await foreign.connect())[0] is False


@pytest.mark.django_db(transaction=True)
async def test_the_in_memory_feed_carries_records_written_in_another_thread(
    alice: Any, acme: Organization, settings: Any, own_connections: None
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    listener = await feed(await sync_to_async(session_cookie)(alice))
    assert (await listener.connect())[0]
    generation = await sync_to_async(make_generation)(acme, model="openai/gpt-5")
    # The recorder is a plain thread, as in billing.recording.hand_off.
    await asyncio.to_thread(publish_generation, generation)
    received = await listener.receive_json_from(timeout=2)
    assert received["generation"]["request_id"] == generation.request_id
    await listener.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_feed_says_which_api_each_generation_was_called_on(
    alice: Any, acme: Organization, settings: Any, own_connections: None
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    listener = await feed(await sync_to_async(session_cookie)(alice))
    assert (await listener.connect())[0]
    make = sync_to_async(make_generation)
    batch = [await make(acme), await make(acme, api="embeddings")]
    await asyncio.to_thread(publish_generations, batch)
    got = [(await listener.receive_json_from(timeout=2))["generation"] for _ in batch]
    assert [(one["api"], one["api_name"]) for one in got] == [
        ("chat", "Chat Completions"),
        ("embeddings", "Embeddings"),
    ]
    await listener.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_batch_reaches_each_organization_one_generation_a_frame_in_order(
    alice: Any, mallory: Any, acme: Organization, globex: Organization, own_connections: None
) -> None:
    alices = await feed(await sync_to_async(session_cookie)(alice))
    mallorys = await feed(await sync_to_async(session_cookie)(mallory))
    assert (await alices.connect())[0] and (await mallorys.connect())[0]
    make = sync_to_async(make_generation)
    # a worker's batch (200 records) of one organization: more than the 100 messages a
    # listener's channel holds, were each generation a message of its own
    batch = [await make(acme if n % 6 else globex) for n in range(3 * PER_MESSAGE)]
    await asyncio.to_thread(publish_generations, batch)
    for listener, org in ((alices, acme), (mallorys, globex)):
        wanted = [g.request_id for g in batch if g.organization_id == org.pk]
        got = [(await listener.receive_json_from(timeout=2))["generation"] for _ in wanted]
        assert [one["request_id"] for one in got] == wanted
        assert await listener.receive_nothing(timeout=0.3)
    await alices.disconnect()
    await mallorys.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_generation_published_alone_by_an_earlier_release_still_reaches_the_feed(
    alice: Any, acme: Organization, own_connections: None
) -> None:
    listener = await feed(await sync_to_async(session_cookie)(alice))
    assert (await listener.connect())[0]
    message = {"type": "generation.recorded", "generation": {"request_id": "acme-old"}}
    await get_channel_layer().group_send(group_name(acme.pk), message)
    assert await listener.receive_json_from(timeout=2) == {"generation": {"request_id": "acme-old"}}
    await listener.disconnect()
