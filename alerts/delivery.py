"""The schedule of deliveries, kept in the database so that it outlives every process: each
pending delivery is due at `next_attempt_at`; the loop claims what is due and sends each to a
worker (or tries it itself in embedded mode); a try that fails is due again after a backoff
that doubles from MOMOR_WEBHOOK_RETRY_SECONDS up to an hour, until a day has passed since its
event. A try is claimed by its number, so a delivery handed out twice is tried once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from alerts.models import Delivery, DeliveryAttempt, DeliveryStatus
from alerts.sending import Outcome, send

log = logging.getLogger(__name__)

GIVE_UP_AFTER = timedelta(days=1)
LONGEST_WAIT = timedelta(hours=1)


def lease() -> timedelta:
    """How long a claimed try may take before the loop hands it out again (its process died):
    twice the endpoint's time to answer, and ten seconds."""
    return timedelta(seconds=2 * settings.MOMOR_WEBHOOK_TIMEOUT_SECONDS + 10)


CLAIMED_AT_ONCE = 100

Dispatch = Callable[[int, int], None]


def backoff(number: int) -> timedelta:
    """The wait after the `number`th failed try."""
    first: float = settings.MOMOR_WEBHOOK_RETRY_SECONDS
    return min(timedelta(seconds=first * 2 ** min(number - 1, 20)), LONGEST_WAIT)


def claim_due(now: datetime) -> list[tuple[int, int]]:
    """(delivery id, number of its next try) of each pending delivery that is due, each
    leased so that no other loop hands it out meanwhile."""
    due = Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    claimed = []
    for pk, at, tried in due.order_by("next_attempt_at").values_list(
        "pk", "next_attempt_at", "attempts"
    )[:CLAIMED_AT_ONCE]:
        leased = Delivery.objects.filter(pk=pk, next_attempt_at=at, status=DeliveryStatus.PENDING)
        if leased.update(next_attempt_at=now + lease()):
            claimed.append((pk, tried + 1))
    return claimed


def attempt(delivery_id: int, number: int) -> bool:
    """Try a delivery for the `number`th time, unless that try was made already; whether it
    was taken."""
    now = timezone.now()
    mine = Delivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, attempts=number - 1
    ).update(attempts=F("attempts") + 1, next_attempt_at=now + lease())
    if not mine:
        return False
    delivery = Delivery.objects.select_related("event__organization", "endpoint").get(
        pk=delivery_id
    )
    try:
        outcome = send(delivery, number)
    except Exception as exc:  # a secret that no longer decrypts, a mail backend misconfigured
        log.exception("alert delivery %s failed", delivery.pk)
        outcome = Outcome(ok=False, error=f"{type(exc).__name__}: Momor could not send it")
    DeliveryAttempt.objects.create(
        delivery=delivery,
        number=number,
        ok=outcome.ok,
        status_code=outcome.status_code,
        answer=outcome.answer,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
    )
    _settle(delivery, number, outcome.ok)
    return outcome.ok


def _settle(delivery: Delivery, number: int, ok: bool) -> None:
    now = timezone.now()
    if ok:
        delivery.status, delivery.finished_at, delivery.next_attempt_at = (
            DeliveryStatus.DELIVERED, now, None
        )  # fmt: skip
    elif now - delivery.event.created_at >= GIVE_UP_AFTER:
        delivery.status, delivery.finished_at, delivery.next_attempt_at = (
            DeliveryStatus.FAILED, now, None
        )  # fmt: skip
        log.warning("alert delivery %s given up after %s tries", delivery.pk, number)
    else:
        delivery.next_attempt_at = now + backoff(number)
    delivery.save(update_fields=["status", "finished_at", "next_attempt_at"])


def dispatch_due(dispatch: Dispatch, now: datetime | None = None) -> int:
    """Hand out every delivery that is due; how many."""
    claimed = claim_due(now or timezone.now())
    for delivery_id, number in claimed:
        dispatch(delivery_id, number)
    return len(claimed)
