"""One try of one delivery: the event posted to its endpoint, signed, through the
outbound-address guard (core/outbound.py: an endpoint on a loopback, private or metadata address
is not called), or mailed to the organization's owners and admins; what came back, or what
stopped it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from http.client import HTTPException

from django.conf import settings
from django.core.mail import send_mail

from alerts import payloads, signing
from alerts.firing import recipients
from alerts.models import Channel, Delivery
from core import outbound

ANSWER_KEPT = 2000
"""Characters of an endpoint's answer kept with its attempt."""
USER_AGENT = "Momor-Webhooks/1"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status_code: int | None = None
    answer: str = ""
    error: str = ""
    duration_ms: int = 0


def send(delivery: Delivery, number: int) -> Outcome:
    started = time.monotonic()
    outcome = _post(delivery, number) if delivery.channel == Channel.WEBHOOK else _mail(delivery)
    elapsed = int((time.monotonic() - started) * 1000)
    return Outcome(outcome.ok, outcome.status_code, outcome.answer, outcome.error, elapsed)


def _post(delivery: Delivery, number: int) -> Outcome:
    endpoint = delivery.endpoint
    if endpoint is None:
        return Outcome(ok=False, error="the endpoint was removed")
    body = payloads.body(delivery.event)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Momor-Event-Id": delivery.event.public_id,
        "Momor-Event-Type": delivery.event.type,
        "Momor-Delivery-Id": str(delivery.pk),
        "Momor-Delivery-Attempt": str(number),
        "Momor-Signature": signing.header(endpoint.secret(), int(time.time()), body),
    }
    try:
        reply = outbound.post(
            endpoint.url,
            body,
            headers,
            timeout=settings.MOMOR_WEBHOOK_TIMEOUT_SECONDS,
            max_bytes=ANSWER_KEPT * 4,
            allowed=outbound.networks(settings.MOMOR_OUTBOUND_ALLOW),
        )
    except (outbound.OutboundRefused, OSError, HTTPException) as exc:
        return Outcome(ok=False, error=_reason(exc))
    answer = reply.body.decode(errors="replace")[:ANSWER_KEPT]
    return Outcome(ok=200 <= reply.status < 300, status_code=reply.status, answer=answer)


def _mail(delivery: Delivery) -> Outcome:
    event = delivery.event
    to = recipients(event.organization)
    if not to:
        return Outcome(ok=True, answer="no owner or admin has an address")
    try:
        send_mail(payloads.mail_subject(event), payloads.mail_text(event), None, to)
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        return Outcome(ok=False, error=_reason(exc))
    return Outcome(ok=True, answer=f"sent to {len(to)} address{'es' if len(to) > 1 else ''}")


def _reason(exc: BaseException) -> str:
    """The error's class and message, without the URL's query (where a token may be)."""
    text = str(exc).split("?", 1)[0]
    return f"{type(exc).__name__}: {text}"[:500]
