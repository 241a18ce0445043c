"""Celery tasks of billing."""

from __future__ import annotations

from typing import Any

import orjson
from celery import shared_task

from billing.storing.dead_letters import TRANSIENT
from billing.storing.store import records_store


@shared_task(
    name="billing.record_generations",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=None,
)
def record_generations(payloads: list[dict[str, Any]]) -> list[str]:
    """Store a batch of records sent as a Celery message (the hand-off of earlier versions,
    still in the queue during an upgrade; records now come through the records stream). A
    record that cannot be stored is parked; only a database outage retries the batch."""
    records_store([orjson.dumps(payload) for payload in payloads])
    return [str(payload.get("request_id", "")) for payload in payloads]
