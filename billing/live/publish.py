"""Live feed of recorded generations: the records a batch stored are published to their
organizations' groups on the Channels layer, where the members' generations page listens: one
message for each organization's share of the batch (at most PER_MESSAGE generations), which
the feed's consumer passes on one generation per frame."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from billing.live.publisher import publisher
from billing.models import Generation
from core.breaker import REDIS, REDIS_DOWN, Breaker
from core.formatting import usd, when

log = logging.getLogger(__name__)

Message = tuple[str, dict[str, Any]]
"""A group and what it is sent."""

# The in-memory layer (no Redis) lives on the server's event loop: its queues wake only
# listeners of that loop, so a record written in another thread is sent from that loop.
_server_loop: asyncio.AbstractEventLoop | None = None
_SEND_TIMEOUT = 5.0
# How long storing waits for its batch beyond the Redis time-out of the send under way.
_GRACE = 0.5
_on_server_loop: set[asyncio.Task[None]] = set()
PER_MESSAGE = 100
"""Generations in one message at most (a message is read whole by every listener)."""


def group_name(organization_id: int) -> str:
    return f"org-{organization_id}-generations"


def remember_loop() -> None:
    """Called by the feed's consumer, on the loop that serves websockets."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def generation_summary(generation: Generation, minutes: dict[datetime, str]) -> dict[str, Any]:
    """What the feed shows of a generation; `minutes` keeps the text of each minute the batch
    has met (a moment is shown to the minute)."""
    return {
        "request_id": generation.request_id,
        "api": generation.api,
        "api_name": generation.get_api_display(),
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
        "when": _minute_text(generation.created_at, minutes),
    }


def _minute_text(moment: datetime, minutes: dict[datetime, str]) -> str:
    minute = moment.replace(second=0, microsecond=0)
    if minute not in minutes:
        minutes[minute] = when(minute)
    return minutes[minute]


def publish_generation(generation: Generation) -> None:
    """Tell the organization's listeners of one generation (see publish_generations)."""
    publish_generations([generation])


def publish_generations(generations: Sequence[Generation]) -> None:
    """Tell each organization's listeners of its new generations, in the order given, in one
    hand-over for them all. A feed that cannot be reached never blocks recording: over Redis
    each send is bounded by the Redis time-out and skipped while Redis is unreachable, and the
    batch is waited for no longer than one send's bound and a short grace."""
    publish_messages(live_messages(generations))


def publish_messages(messages: list[Message]) -> None:
    """Send messages `live_messages` made (in this process or in another)."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    try:
        if isinstance(layer, InMemoryChannelLayer):
            _send_in_memory(layer, messages)
        else:
            _send_over_redis(layer, messages)
    except Exception:  # the live feed is best effort; the records are already stored
        count = sum(len(message["generations"]) for _, message in messages)
        log.warning("could not publish %d generations to the live feed", count)


def live_messages(generations: Sequence[Generation]) -> list[Message]:
    """Each organization's generations, in the order given, PER_MESSAGE to a message."""
    by_org: dict[int, list[dict[str, Any]]] = {}
    minutes: dict[datetime, str] = {}
    for generation in generations:
        summary = generation_summary(generation, minutes)
        by_org.setdefault(generation.organization_id, []).append(summary)
    return [
        (
            group_name(org),
            {"type": "generations.recorded", "generations": summaries[i : i + PER_MESSAGE]},
        )
        for org, summaries in by_org.items()
        for i in range(0, len(summaries), PER_MESSAGE)
    ]


def _send_over_redis(layer: BaseChannelLayer, messages: list[Message]) -> None:
    """On the publisher's loop, whose connections to Redis serve every batch."""
    timeout = float(settings.MOMOR_REDIS_TIMEOUT_SECONDS)
    publisher().run(lambda: _send_all(layer, messages, timeout, REDIS), wait=timeout + _GRACE)


def _send_in_memory(layer: BaseChannelLayer, messages: list[Message]) -> None:
    loop = _server_loop
    if loop is None or not loop.is_running():
        async_to_sync(_send_all)(layer, messages, _SEND_TIMEOUT, None)
    elif _on_loop(loop):
        task = loop.create_task(_send_all(layer, messages, _SEND_TIMEOUT, None))
        _on_server_loop.add(task)
        task.add_done_callback(_on_server_loop.discard)
    else:
        future = asyncio.run_coroutine_threadsafe(
            _send_all(layer, messages, _SEND_TIMEOUT, None), loop
        )
        future.result(timeout=_SEND_TIMEOUT)


async def _send_all(
    layer: BaseChannelLayer, messages: list[Message], timeout: float, breaker: Breaker | None
) -> None:
    """Each message in turn (a group's listeners get them in order); while the breaker is
    open, none is sent, and one that finds the store unreachable opens it."""
    for group, message in messages:
        if breaker is not None and not breaker.allow():
            continue
        try:
            async with asyncio.timeout(timeout):
                await layer.group_send(group, message)
        except Exception as exc:
            if breaker is not None and isinstance(exc, REDIS_DOWN):
                breaker.failed()
            count = len(message["generations"])
            log.warning("could not publish %d generations to the live feed (%s)", count, group)
        else:
            if breaker is not None:
                breaker.succeeded()


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
