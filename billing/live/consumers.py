"""The live feed: a signed-in member's websocket joins their current organization's group and
receives each generation as it is recorded (billing.live.publish publishes a batch's share of each
organization in one message; each generation goes out in a frame of its own). Before each
message is passed on, the session and the membership are checked again: a person signed out
(or whose password changed) or removed from the organization gets nothing more, and their
socket is closed (4403)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest

from accounts.models import Membership
from accounts.permissions import SESSION_ORG
from billing.live.publish import group_name, remember_loop


def _organization_of(user_id: int, wanted: object) -> int | None:
    """The session's organization if the user is a member of it, else their first one."""
    memberships = Membership.objects.filter(user_id=user_id).order_by("created_at", "pk")
    if isinstance(wanted, int) and memberships.filter(organization_id=wanted).exists():
        return wanted
    first: int | None = memberships.values_list("organization_id", flat=True).first()
    return first


def _still_allowed(session_key: str | None, user_id: int, org_id: int) -> bool:
    """The session, read afresh, still signs this user in, and they are still a member."""
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    if get_user(request).pk != user_id:
        return False
    return Membership.objects.filter(user_id=user_id, organization_id=org_id).exists()


class GenerationFeed(AsyncJsonWebsocketConsumer):
    group: str | None = None
    org_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        wanted = self.scope["session"].get(SESSION_ORG)
        org_id = await database_sync_to_async(_organization_of)(user.pk, wanted)
        if org_id is None:
            await self.close(code=4403)
            return
        remember_loop()
        self.org_id, self.group = org_id, group_name(org_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def generations_recorded(self, event: dict[str, Any]) -> None:
        if not await self._still_allowed():
            await self.disconnect(4403)
            self.group = None
            await self.close(code=4403)
            return
        for generation in event["generations"]:
            await self.send_json({"generation": generation})

    async def generation_recorded(self, event: dict[str, Any]) -> None:
        """One generation, as workers of the previous release publish it (a rolling upgrade
        runs both for a while)."""
        await self.generations_recorded({"generations": [event["generation"]]})

    async def _still_allowed(self) -> bool:
        user = self.scope.get("user")
        if self.org_id is None or user is None:
            return False
        session_key = self.scope["session"].session_key
        check = database_sync_to_async(_still_allowed)
        allowed: bool = await check(session_key, user.pk, self.org_id)
        return allowed
