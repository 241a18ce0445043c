"""Records that cannot be stored as generations are parked here, whole, with why; the call's
charge still reaches the ledger and its usage the daily rollups (the usage pages and its key's
spend), so a bad record never costs the organization nothing."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import (
    IntegrityError,
    InterfaceError,
    InternalError,
    OperationalError,
    ProgrammingError,
    transaction,
)

from billing.calls.records import CallRecord
from billing.calls.storable import storable_text
from billing.ledger.posting import charge_key, ledger_post
from billing.models import MONEY_DIGITS, MONEY_PLACES, DeadLetter, EntryKind
from billing.storing.generations import (
    Stored,
    call_charge,
    generation_row,
    posted_charge,
    served_cost,
)
from billing.usage.rollups import rollups_add

log = logging.getLogger(__name__)

# What the database raises when it, not the record, is the problem (down, restarting, not
# migrated): the batch is tried again. A record the database refuses raises DataError,
# IntegrityError or a Python error instead.
TRANSIENT = (OperationalError, InterfaceError, InternalError, ProgrammingError)

MONEY_BOUND = Decimal(10) ** (MONEY_DIGITS - MONEY_PLACES)


def dead_letter_park(
    raw: bytes, record: CallRecord | None, problem: BaseException, *, count_usage: bool = True
) -> Stored:
    """Park a record (or a payload that did not decode), post its charge and, with
    `count_usage`, count its usage; in the caller's transaction. A record parked already is
    left as it is."""
    request_id = record.request_id if record is not None else ""
    org_id = record.organization_id if record is not None else None
    log.error("parking the record of call %s: %s", request_id or "?", _describe(problem))
    cost = _cost(record)
    stored = Stored(org_id or 0, request_id)
    if record is not None and cost is not None and cost > 0:
        stored.charge = _charge(record, cost)
    parked = _letter(request_id, org_id, raw, problem, cost, stored.charge is not None)
    if parked and count_usage and record is not None and cost is not None:
        _usage_count(record)
    return stored


def _cost(record: CallRecord | None) -> Decimal | None:
    """The cost to charge, if it can be read and the ledger's money column holds it (one past
    it would fail the letter itself, and with it the batch, on every retry)."""
    if record is None:
        return None
    try:
        cost = served_cost(record)
    except Exception:  # prices or counts that cannot be read: parked without a charge
        return None
    return cost if abs(cost) < MONEY_BOUND else None


def _charge(record: CallRecord, cost: Decimal) -> tuple[int, int] | None:
    try:
        with transaction.atomic():
            ledger_post(
                organization_id=record.organization_id,
                kind=EntryKind.CHARGE,
                amount=-cost,
                note=storable_text(f"{record.model} via {record.provider} (record parked)")[:300],
                idempotency_key=charge_key(record.request_id),
                api_key_id=record.api_key_id,
                announce=False,
            )
    except TRANSIENT:
        raise
    except Exception as exc:  # an organization that no longer exists, say
        log.error("could not charge parked call %s: %s", record.request_id, _describe(exc))
        return None
    return posted_charge(record.request_id)


def _letter(
    request_id: str,
    org_id: int | None,
    raw: bytes,
    problem: BaseException,
    cost: Decimal | None,
    charged: bool,
) -> bool:
    """Park the letter; False if it was parked already (a record delivered again). Should the
    database refuse what the record names (an organization id past its column, say), the
    letter is parked without its organization and cost, which it cannot refuse."""
    letter = DeadLetter(
        request_id=storable_text(request_id)[:64],
        organization_id=org_id,
        payload=storable_text(raw.decode("utf-8", "replace")),
        error=storable_text(_describe(problem))[:2000],
        cost=cost,
        charge_posted=charged,
    )
    try:
        with transaction.atomic():
            letter.save()
    except IntegrityError:  # parked already, when it was delivered before
        return False
    except TRANSIENT:
        raise
    except Exception as exc:
        if org_id is None and cost is None:
            raise
        log.error("parking call %s without its organization: %s", request_id, _describe(exc))
        return _letter(letter.request_id, None, raw, problem, None, charged)
    return True


def _usage_count(record: CallRecord) -> None:
    """The parked call's usage in its day's rollup, as a stored call's is counted."""
    try:
        with transaction.atomic():
            rollups_add([generation_row(record, call_charge(record))])
    except TRANSIENT:
        raise
    except Exception as exc:  # an organization that no longer exists, say
        log.error("could not count parked call %s: %s", record.request_id, _describe(exc))


def _describe(problem: BaseException) -> str:
    return f"{type(problem).__name__}: {problem}"
