"""The test button's event: sent to one endpoint at once, outside the rules (it fires no
rule and is not once per anything)."""

from __future__ import annotations

from django.db import transaction

from alerts.firing import deliveries_for
from alerts.models import AlertEvent, Delivery, WebhookEndpoint


def trial_event(endpoint: WebhookEndpoint, asked_by: str) -> Delivery:
    """A `test` event for the endpoint's organization and its one delivery, to `endpoint`."""
    with transaction.atomic():
        event = AlertEvent.objects.create(
            organization=endpoint.organization,
            type="test",
            key="",
            summary=f"A test event sent by {asked_by}"[:300],
            data={"endpoint": endpoint.url},
        )
        (delivery,) = deliveries_for(event, email=False, endpoint_ids=[endpoint.pk])
    return delivery
