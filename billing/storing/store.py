"""Storing a batch of records (from the records stream, the journal or a Celery message): one
transaction, the records stored together in set-based queries (`billing.storing.batches`) in a
savepoint. Should the database refuse one of them, that savepoint is rolled back and they are
stored again each in a savepoint of its own, so a record the database refuses never rolls
back, retries or drops another; it is parked as a dead letter with its charge posted. Only a
failure of the database itself fails the batch, which is then stored again whole (storing is
idempotent on the request id)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import orjson
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Model

from accounts.models import ApiKey, Organization
from billing.admission.operations import Posted, charges_posted
from billing.calls.records import CallRecord, record_from_payload
from billing.calls.storable import storable
from billing.live.publish import Message, live_messages, publish_messages
from billing.retention.dropped import ids_forgotten_before
from billing.storing.batches import batch_store
from billing.storing.dead_letters import TRANSIENT, dead_letter_park
from billing.storing.generations import Stored, generation_store

log = logging.getLogger(__name__)

CHUNK = 500
"""Records stored together at most (a journal applied after a long outage holds more)."""
Decoded = tuple[bytes, CallRecord | Exception]


@dataclass(frozen=True, slots=True)
class Announcement:
    """What a stored batch tells the rest of the process: the charges admission no longer holds
    as unposted, and the live feed's messages."""

    posted: list[Posted]
    messages: list[Message]


def records_store(payloads: Sequence[bytes]) -> None:
    """Store every record of the batch, or raise one of TRANSIENT having stored none."""
    announce(records_commit(payloads))


def records_commit(payloads: Sequence[bytes]) -> Announcement:
    """Store the batch (as `records_store`) without telling anyone: what to announce, and where,
    is the caller's (the embedded mode's storing process sends it to its gateway)."""
    decoded = sorted((_decode(raw) for raw in payloads), key=_lock_order)
    with transaction.atomic():
        _constraints_immediate()
        known = References.of([record for _, record in decoded if isinstance(record, CallRecord)])
        stored = _store_all(decoded, known)
    posted = [(s.organization_id, s.request_id, *s.charge) for s in stored if s.charge]
    generations = [one.generation for one in stored if one.generation is not None]
    return Announcement(posted, live_messages(generations))


def announce(announcement: Announcement) -> None:
    charges_posted(announcement.posted)
    publish_messages(announcement.messages)


def _decode(raw: bytes) -> Decoded:
    """The record, its text made storable where it can need it: JSON orjson reads holds no
    lone surrogate, so only a NUL can, and orjson writes one as an escape."""
    try:
        record = record_from_payload(orjson.loads(raw))
        return raw, storable(record) if b"\\u0000" in raw else record
    except Exception as exc:
        return raw, exc


def _lock_order(item: Decoded) -> int:
    """Batches take organizations' balance rows in one order: two consumers never deadlock."""
    org = getattr(item[1], "organization_id", None)
    return org if isinstance(org, int) else -1


def _constraints_immediate() -> None:
    """PostgreSQL checks foreign keys when the transaction commits, which would fail the whole
    batch for one record; checked at once, they fail that record's savepoint alone."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@dataclass(frozen=True, slots=True)
class References:
    """The organizations, keys and users a batch's records name that still exist: a call whose
    key or member was deleted since is stored without them (as deleting them would have left
    it); one whose organization was deleted has nowhere to go and is parked. The organizations'
    rows are locked at once, in id order: whatever else the batch locks belongs to one of them,
    so two batches never deadlock."""

    orgs: frozenset[int]
    keys: frozenset[int]
    users: frozenset[int]

    @classmethod
    def of(cls, records: list[CallRecord]) -> References:
        return cls(
            _existing(Organization, {r.organization_id for r in records}, lock=True),
            _existing(ApiKey, {r.api_key_id for r in records if r.api_key_id is not None}),
            _existing(get_user_model(), {r.user_id for r in records if r.user_id is not None}),
        )

    def fit(self, record: CallRecord) -> CallRecord:
        if record.organization_id not in self.orgs:
            raise LookupError(f"organization {record.organization_id} does not exist")
        key = record.api_key_id if record.api_key_id in self.keys else None
        user = record.user_id if record.user_id in self.users else None
        if (key, user) == (record.api_key_id, record.user_id):
            return record
        return dataclasses.replace(record, api_key_id=key, user_id=user)


def _existing(model: type[Model], ids: set[int], lock: bool = False) -> frozenset[int]:
    valid = [i for i in ids if isinstance(i, int)]
    rows = model._default_manager.filter(pk__in=valid).order_by("pk")
    if lock:
        rows = rows.select_for_update(no_key=True)
    return frozenset(rows.values_list("pk", flat=True))


def _store_all(decoded: list[Decoded], known: References) -> list[Stored]:
    """Records that cannot be placed, or are too old to tell whether they were stored, are
    parked first; the others stored together, CHUNK at a time."""
    stored: list[Stored | None] = []
    placed: list[tuple[int, bytes, CallRecord]] = []
    moments = [record.created_at for _, record in decoded if isinstance(record, CallRecord)]
    forgotten = ids_forgotten_before(min(moments)) if moments else None
    for raw, record in decoded:
        if not isinstance(record, CallRecord) or record.organization_id not in known.orgs:
            stored.append(_store_one(raw, record, known))
        elif forgotten is not None and record.created_at < forgotten:
            stored.append(dead_letter_park(raw, record, TooOld(forgotten), count_usage=False))
        else:
            placed.append((len(stored), raw, record))
            stored.append(None)
    for start in range(0, len(placed), CHUNK):
        chunk = placed[start : start + CHUNK]
        together = _store_together([(raw, record) for _, raw, record in chunk], known)
        for (index, _, _), one in zip(chunk, together, strict=True):
            stored[index] = one
    return [one for one in stored if one is not None]


class TooOld(Exception):
    """A record made before the moment the dropped calls' ids are kept from: whether it was
    stored before the retention dropped it cannot be known, so it is parked (its charge posted
    once, its usage not counted again)."""

    def __init__(self, forgotten: datetime) -> None:
        super().__init__(f"made before {forgotten.isoformat()}, whose dropped calls are forgotten")


def _store_together(records: list[tuple[bytes, CallRecord]], known: References) -> list[Stored]:
    """The records together in one savepoint; should the database refuse one, one by one."""
    try:
        with transaction.atomic():
            return batch_store([known.fit(record) for _, record in records])
    except TRANSIENT:
        raise
    except Exception as exc:
        why = str(exc).partition("\n")[0]
        log.info("storing %d records one by one: %s: %s", len(records), type(exc).__name__, why)
    return [_store_one(raw, record, known) for raw, record in records]


def _store_one(raw: bytes, record: CallRecord | Exception, known: References) -> Stored:
    if isinstance(record, Exception):
        return dead_letter_park(raw, None, record)
    try:
        with transaction.atomic():
            return generation_store(known.fit(record))
    except TRANSIENT:
        raise
    except Exception as exc:
        return dead_letter_park(raw, record, exc)
