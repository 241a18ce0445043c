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

CHUNK = 500
"""Event keys looked up in one query."""


def check_all(now: datetime | None = None) -> list[AlertEvent]:
    """Check every organization's rules once; the events fired. What fired already in its
    window, and a condition that holds as it did, cost no write."""
    now = now or timezone.now()
    found = list(findings(list(AlertRule.objects.all()), now))
    windowed = [f for f in found if f.window is not None and f.holds]
    tracked = [f for f in found if f.window is None]
    fired = [_event(f, key) for f, key in _not_fired(windowed)]
    states = _states(tracked)
    for finding in tracked:
        state = states.get((finding.rule.pk, finding.subject))
        if finding.holds != (state is not None and state.holding):
            fired.append(_track(finding))
    return [event for event in fired if event is not None]


def _key(finding: Finding, episode: str | int) -> str:
    return f"rule{finding.rule.pk}:{finding.subject}:{episode}"


def _not_fired(windowed: list[Finding]) -> list[tuple[Finding, str]]:
    """Each finding with its event's key, unless that event exists."""
    keyed = [(finding, _key(finding, str(finding.window))) for finding in windowed]
    known: set[str] = set()
    keys = [key for _, key in keyed]
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        known.update(AlertEvent.objects.filter(key__in=chunk).values_list("key", flat=True))
    return [(finding, key) for finding, key in keyed if key not in known]


def _states(tracked: list[Finding]) -> dict[tuple[int, str], AlertState]:
    rules = {finding.rule.pk for finding in tracked}
    return {(s.rule_id, s.subject): s for s in AlertState.objects.filter(rule_id__in=rules)}


def _track(finding: Finding) -> AlertEvent | None:
    """A finding without a window fires when it starts to hold, and is re-armed once it no
    longer does (checked again under the state's lock: another process may have been first)."""
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
        return _event(finding, _key(finding, state.episode))


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
