"""Live feed of recorded generations: each new record is published to its organization's group
on the Channels layer, where the members' generations page listens."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from accounts.formatting import usd, when
from billing.breaker import REDIS, REDIS_DOWN
from billing.models import Generation

log = logging.getLogger(__name__)

# The in-memory layer (no Redis) lives on the server's event loop: its queues wake only
# listeners of that loop, so a record written in another thread is sent from that loop.
_server_loop: asyncio.AbstractEventLoop | None = None
_SEND_TIMEOUT = 5.0


def group_name(organization_id: int) -> str:
    return f"org-{organization_id}-generations"


def remember_loop() -> None:
    """Called by the feed's consumer, on the loop that serves websockets."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def generation_summary(generation: Generation) -> dict[str, Any]:
    return {
        "request_id": generation.request_id,
        "model": generation.model,
        "requested": generation.requested,
        "provider": generation.provider,
        "status": generation.status,
        "streamed": generation.streamed,
        "prompt_tokens": generation.prompt_tokens,
        "completion_tokens": generation.completion_tokens,
        "cost": str(generation.cost),
        "cost_text": usd(generation.cost),
        "latency_ms": generation.latency_ms,
        "created_at": generation.created_at.isoformat(),
        "when": when(generation.created_at),
    }


def publish_generation(generation: Generation) -> None:
    """Tell the organization's listeners; a feed that cannot be reached never blocks recording
    (each send is bounded by the Redis time-out, and skipped while Redis is unreachable)."""
    layer = get_channel_layer()
    if layer is None:
        return
    in_memory = isinstance(layer, InMemoryChannelLayer)
    if not in_memory and not REDIS.allow():
        return
    message = {"type": "generation.recorded", "generation": generation_summary(generation)}
    try:
        _send(layer, group_name(generation.organization_id), message)
    except Exception as exc:  # the live feed is best effort; the record is already stored
        if not in_memory and isinstance(exc, REDIS_DOWN):
            REDIS.failed()
        log.warning("could not publish generation %s to the live feed", generation.request_id)
    else:
        if not in_memory:
            REDIS.succeeded()


def _send(layer: BaseChannelLayer, group: str, message: dict[str, Any]) -> None:
    loop = _server_loop
    if isinstance(layer, InMemoryChannelLayer) and loop is not None and loop.is_running():
        if _on_loop(loop):
            loop.create_task(layer.group_send(group, message))
            return
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        future.result(timeout=_SEND_TIMEOUT)
        return
    async_to_sync(_bounded_send)(layer, group, message)


async def _bounded_send(layer: BaseChannelLayer, group: str, message: dict[str, Any]) -> None:
    async with asyncio.timeout(settings.MOMOR_REDIS_TIMEOUT_SECONDS):
        await layer.group_send(group, message)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
