"""A check of every organization's rules: each finding that starts an episode (a budget's
share reached in a window; a condition that starts to hold) becomes one event, and the event
one delivery to each of the organization's webhook endpoints and, where its rule says so, one
to its owners' and admins' mailboxes. An event is unique on its episode, so processes checking
at once fire it once."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Membership, Organization, Role
from alerts.conditions import Finding, findings
from alerts.models import AlertEvent, AlertRule, AlertState, Channel, Delivery

log = logging.getLogger(__name__)


def check_all(now: datetime | None = None) -> list[AlertEvent]:
    """Check every organization's rules once; the events fired."""
    now = now or timezone.now()
    rules = list(AlertRule.objects.order_by("organization_id", "id"))
    fired: list[AlertEvent] = []
    for org_id in dict.fromkeys(rule.organization_id for rule in rules):
        mine = [rule for rule in rules if rule.organization_id == org_id]
        for finding in findings(mine, now):
            event = _fire(finding) if finding.window else _track(finding)
            if event is not None:
                fired.append(event)
    return fired


def _fire(finding: Finding) -> AlertEvent | None:
    """A windowed finding fires once in its window."""
    if not finding.holds:
        return None
    return _event(finding, f"rule{finding.rule.pk}:{finding.subject}:{finding.window}")


def _track(finding: Finding) -> AlertEvent | None:
    """A finding without a window fires when it starts to hold, and is re-armed once it no
    longer does."""
    with transaction.atomic():
        state, _ = AlertState.objects.select_for_update().get_or_create(
            rule=finding.rule, subject=finding.subject
        )
        if finding.holds == state.holding:
            return None
        state.holding = finding.holds
        state.episode += finding.holds
        state.save(update_fields=["holding", "episode"])
        if not finding.holds:
            return None
        key = f"rule{finding.rule.pk}:{finding.subject}:{state.episode}"
        return _event(finding, key)


def _event(finding: Finding, key: str) -> AlertEvent | None:
    rule = finding.rule
    try:
        with transaction.atomic():
            event = AlertEvent.objects.create(
                organization_id=rule.organization_id,
                rule=rule,
                type=finding.type,
                key=key,
                summary=finding.summary[:300],
                data=finding.data,
            )
            deliveries_for(event, email=rule.email)
    except IntegrityError:
        return None  # fired already, by this process or another
    log.info("alert fired: %s (organization %s)", finding.type, rule.organization_id)
    return event


def deliveries_for(
    event: AlertEvent, *, email: bool, endpoint_ids: list[int] | None = None
) -> list[Delivery]:
    """One delivery of `event` to each of its organization's endpoints (or those named), and
    one by e-mail when `email` and anyone is to receive it; each due now."""
    now = timezone.now()
    endpoints = event.organization.webhooks.all()
    if endpoint_ids is not None:
        endpoints = endpoints.filter(pk__in=endpoint_ids)
    made = [
        Delivery(event=event, channel=Channel.WEBHOOK, endpoint=endpoint, next_attempt_at=now)
        for endpoint in endpoints
    ]
    if email and recipients(event.organization):
        made.append(Delivery(event=event, channel=Channel.EMAIL, next_attempt_at=now))
    return Delivery.objects.bulk_create(made)


def recipients(organization: Organization) -> list[str]:
    """The addresses of the organization's owners and admins."""
    members = Membership.objects.filter(
        organization=organization, role__in=[Role.OWNER, Role.ADMIN], user__is_active=True
    ).exclude(user__email="")
    return sorted(set(members.values_list("user__email", flat=True)))
