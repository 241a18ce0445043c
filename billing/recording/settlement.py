"""What the settle script is given for a finished call: its reservation, its cost and its
record."""

from __future__ import annotations

import logging

from django.db import DatabaseError

from billing.admission.operations import Settlement, released
from billing.calls.cost import to_units
from billing.calls.records import CallRecord
from billing.ledger.admission_sync import key_tag
from billing.ledger.posting import charge_key
from billing.models import LedgerEntry
from billing.storing.generations import served_cost

log = logging.getLogger(__name__)


def settlement_of(record: CallRecord, payload: bytes = b"") -> Settlement:
    """The shared store's settlement of a call. A reservation this process issued itself names
    nothing in Redis, unless Redis carried out an admission it did not answer in time: either
    way, releasing it there is safe (an id Redis does not hold is left alone)."""
    ticket = record.ticket
    tag = ticket.key_tag if ticket is not None else key_tag(record.api_key_id, record.user_id)
    return Settlement(
        record.organization_id, tag, ticket, cost_units(record), record.request_id, payload
    )


def cost_units(record: CallRecord) -> int:
    """The call's charge in nano-dollars; a record whose cost cannot be read is settled at 0
    (its consumer parks it, and the charge is posted from there if it can be)."""
    try:
        return max(to_units(served_cost(record)), 0)
    except Exception:
        log.exception("could not price call %s", record.request_id)
        return 0


def not_posted_again(settlements: list[Settlement]) -> list[Settlement]:
    """The settlements a replay sends to Redis: a call whose charge the ledger has already
    (its settle and record got through before it was journaled, or a process that died had
    applied it) only releases its reservation there, so its charge is neither held again as
    unposted nor counted again in its key's spend. Should the ledger not answer, they go as
    they are (the refresher's reconcile clears what was posted)."""
    charged = [charge_key(one.request_id) for one in settlements if one.cost > 0]
    try:
        found = LedgerEntry.objects.filter(idempotency_key__in=charged)
        posted = set(found.values_list("idempotency_key", flat=True))
    except DatabaseError:
        return settlements
    return [released(one) if charge_key(one.request_id) in posted else one for one in settlements]
