"""Attacker-style: a removed or signed-out member keeps the generations page open. The live
feed checks the session and the membership again before each message: they get nothing more
and the socket is closed."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from accounts.models import Membership, Organization, Role
from accounts.services import membership_remove
from billing.live.publish import group_name
from tests.conftest import make_org, make_user

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


CLIENTS: dict[str, Client] = {}


def session_cookie(user: Any) -> str:
    client = CLIENTS[user.username] = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def feed_of(user: Any) -> WebsocketCommunicator:
    from momor.asgi import application

    cookie = await sync_to_async(session_cookie)(user)
    headers = [
        (b"origin", b"http://localhost"),
        (b"host", b"localhost"),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]
    communicator = WebsocketCommunicator(application, "/ws/generations/", headers=headers)
    assert (await communicator.connect())[0]
    return communicator


async def publish(org: Organization, request_id: str) -> None:
    message = {"type": "generations.recorded", "generations": [{"request_id": request_id}]}
    await get_channel_layer().group_send(group_name(org.pk), message)


@pytest.fixture
async def acme_feeds() -> Any:
    """acme, with alice (owner) and bob (member) each watching its feed."""
    acme = await sync_to_async(make_org)("acme")
    alice = await sync_to_async(make_user)("alice", acme, Role.OWNER)
    bob = await sync_to_async(make_user)("bob", acme, Role.MEMBER)
    feeds = {"alice": await feed_of(alice), "bob": await feed_of(bob)}
    await publish(acme, "before")
    for feed in feeds.values():
        assert await feed.receive_json_from(timeout=2) == {"generation": {"request_id": "before"}}
    yield acme, bob, feeds
    for feed in feeds.values():
        await feed.disconnect()
    await sync_to_async(connections.close_all)()


@pytest.mark.parametrize("how", ["service", "admin", "signed out", "password changed"])
async def test_a_removed_or_signed_out_members_feed_gets_nothing_more_and_is_closed(
    acme_feeds: Any, how: str
) -> None:
    acme, bob, feeds = acme_feeds
    membership = await Membership.objects.aget(user=bob)
    if how == "service":
        await sync_to_async(membership_remove)(membership=membership)
    elif how == "admin":
        await membership.adelete()
    elif how == "signed out":
        await sync_to_async(CLIENTS["bob"].logout)()
    else:
        bob.set_password("bobs-new-pass-42")
        await bob.asave()

    await publish(acme, "after")

    assert await feeds["alice"].receive_json_from(timeout=2) == {
        "generation": {"request_id": "after"}
    }
    closing = await feeds["bob"].receive_output(timeout=2)
    assert closing == {"type": "websocket.close", "code": 4403}
    await publish(acme, "later")
    assert await feeds["bob"].receive_nothing(timeout=0.3)
