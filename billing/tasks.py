"""Celery tasks of billing."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from billing.generations import generation_record
from billing.records import record_from_payload


@shared_task(
    name="billing.record_generations",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=100,
)
def record_generations(payloads: list[dict[str, Any]]) -> list[str]:
    """Store a batch of finished calls; a retry stores again only what is not stored yet."""
    return [generation_record(record_from_payload(payload)).request_id for payload in payloads]
