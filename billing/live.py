"""Live feed of recorded generations: each new record is published to its organization's group
on the Channels layer, where the members' generations page listens."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from billing.models import Generation

log = logging.getLogger(__name__)


def group_name(organization_id: int) -> str:
    return f"org-{organization_id}-generations"


def generation_summary(generation: Generation) -> dict[str, Any]:
    return {
        "request_id": generation.request_id,
        "model": generation.model,
        "provider": generation.provider,
        "status": generation.status,
        "streamed": generation.streamed,
        "prompt_tokens": generation.prompt_tokens,
        "completion_tokens": generation.completion_tokens,
        "cost": str(generation.cost),
        "latency_ms": generation.latency_ms,
        "created_at": generation.created_at.isoformat(),
    }


def publish_generation(generation: Generation) -> None:
    """Tell the organization's listeners; a feed that cannot be reached never blocks recording."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "generation.recorded", "generation": generation_summary(generation)}
    try:
        async_to_sync(layer.group_send)(group_name(generation.organization_id), message)
    except Exception:  # the live feed is best effort; the record is already stored
        log.warning("could not publish generation %s to the live feed", generation.request_id)
