"""What the settle script is given for a finished call: its reservation, its cost and its
record."""

from __future__ import annotations

import logging

from billing.admission.redis_store import Settlement
from billing.admission.sync import key_tag
from billing.cost import to_units
from billing.generations import served_cost
from billing.records import CallRecord

log = logging.getLogger(__name__)


def settlement_of(record: CallRecord, payload: bytes = b"") -> Settlement:
    """The shared store's settlement of a call (a reservation this process issued itself is
    settled here, not there: its id names nothing in Redis)."""
    ticket = record.ticket
    shared = ticket if ticket is not None and ticket.shared else None
    tag = ticket.key_tag if ticket is not None else key_tag(record.api_key_id, record.user_id)
    return Settlement(
        record.organization_id, tag, shared, cost_units(record), record.request_id, payload
    )


def cost_units(record: CallRecord) -> int:
    """The call's charge in nano-dollars; a record whose cost cannot be read is settled at 0
    (its consumer parks it, and the charge is posted from there if it can be)."""
    try:
        return to_units(served_cost(record))
    except Exception:
        log.exception("could not price call %s", record.request_id)
        return 0
