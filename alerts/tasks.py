"""The Celery task that tries one delivery (handed out by the alerts loop, alerts/loop.py)."""

from __future__ import annotations

from celery import shared_task

from alerts.delivery import attempt


@shared_task(name="alerts.deliver", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver(delivery_id: int, number: int) -> bool:
    return attempt(delivery_id, number)
