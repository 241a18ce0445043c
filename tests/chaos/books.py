"""The books after a scenario, read straight from the suite's PostgreSQL and Redis: every call
that got a complete answer has exactly one record, each served call exactly one charge, no
request id has two of either, the balance is the ledger's sum, and no reservation is open;
and per API (`assert_each_api_books`): each answered call's record keeps its API, model and
the tokens its model reported, its answer's id is its request id's, every record costs its
tokens at its offering's prices and is charged that cost."""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

import psycopg
import redis

from core.redis_keys import org_key
from tests.chaos.conftest import OFFERED, Tokens
from tests.chaos.load import Outcome


def org_id(database_url: str, slug: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT id FROM accounts_organization WHERE slug = %s", [slug]
        ).fetchone()
    assert row is not None
    return int(row[0])


def recorded(database_url: str, request_ids: list[str]) -> dict[str, int]:
    """Generations (and parked records) per request id."""
    sql = """
        SELECT request_id, count(*) FROM (
            SELECT request_id FROM billing_generation WHERE request_id = ANY(%(ids)s)
            UNION ALL
            SELECT request_id FROM billing_deadletter WHERE request_id = ANY(%(ids)s)
        ) AS records GROUP BY request_id
    """
    with psycopg.connect(database_url) as conn:
        return {rid: n for rid, n in conn.execute(sql, {"ids": request_ids}).fetchall()}


def wait_recorded(database_url: str, request_ids: list[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(recorded(database_url, request_ids)) == len(set(request_ids)):
            return
        time.sleep(0.25)
    missing = set(request_ids) - set(recorded(database_url, request_ids))
    raise AssertionError(f"{len(missing)} answered calls not recorded: {sorted(missing)[:5]}")


def assert_books_balance(
    database_url: str, redis_url: str, slug: str, outcomes: list[Outcome]
) -> None:
    answered = [o for o in outcomes if o.complete]
    ids = [o.request_id for o in answered if o.request_id]
    assert len(ids) == len(answered), "a complete answer without X-Momor-Request-Id"
    wait_recorded(database_url, ids)
    org = org_id(database_url, slug)
    with psycopg.connect(database_url) as conn:
        assert recorded(database_url, ids) == dict.fromkeys(ids, 1)
        _assert_one_each(conn, org)
        _assert_served_charged(conn, [o.request_id for o in answered if o.status == 200])
        _assert_balance(conn, org)
    _assert_no_open_reservation(redis_url, org)


def assert_shown_billed_once(database_url: str, outcomes: list[Outcome]) -> None:
    """Every call whose client saw content, answered whole or cut off, has one record and one
    charge."""
    ids = [o.request_id for o in outcomes if o.shown and o.request_id]
    wait_recorded(database_url, ids)
    assert recorded(database_url, ids) == dict.fromkeys(ids, 1)
    _assert_served_charged_once(database_url, ids)


def _assert_served_charged_once(database_url: str, request_ids: list[str]) -> None:
    keys = [f"charge:{rid}" for rid in request_ids]
    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            "SELECT idempotency_key, count(*) FROM billing_ledgerentry "
            "WHERE idempotency_key = ANY(%s) GROUP BY idempotency_key",
            [keys],
        ).fetchall()
    assert dict(found) == dict.fromkeys(keys, 1)


def _assert_one_each(conn: psycopg.Connection, org: int) -> None:
    twice = conn.execute(
        "SELECT request_id FROM billing_generation WHERE organization_id = %s "
        "GROUP BY request_id HAVING count(*) > 1",
        [org],
    ).fetchall()
    assert twice == []
    charged_twice = conn.execute(
        "SELECT generation_id FROM billing_ledgerentry WHERE organization_id = %s "
        "AND kind = 'charge' GROUP BY generation_id HAVING count(*) > 1",
        [org],
    ).fetchall()
    assert charged_twice == []
    # every charge belongs to a record, and every record that cost something has its charge
    orphans = conn.execute(
        "SELECT l.idempotency_key FROM billing_ledgerentry l WHERE l.organization_id = %s "
        "AND l.kind = 'charge' AND NOT EXISTS (SELECT 1 FROM billing_generation g "
        "WHERE 'charge:' || g.request_id = l.idempotency_key) AND NOT EXISTS "
        "(SELECT 1 FROM billing_deadletter d WHERE 'charge:' || d.request_id = l.idempotency_key)",
        [org],
    ).fetchall()
    assert orphans == []
    uncharged = conn.execute(
        "SELECT g.request_id FROM billing_generation g WHERE g.organization_id = %s "
        "AND g.cost > 0 AND NOT EXISTS (SELECT 1 FROM billing_ledgerentry l "
        "WHERE l.idempotency_key = 'charge:' || g.request_id)",
        [org],
    ).fetchall()
    assert uncharged == []


def _assert_served_charged(conn: psycopg.Connection, served: list[str | None]) -> None:
    keys = [f"charge:{rid}" for rid in served]
    found = conn.execute(
        "SELECT count(*) FROM billing_ledgerentry WHERE idempotency_key = ANY(%s)", [keys]
    ).fetchone()
    assert found is not None and found[0] == len(keys)


BALANCE = """
    SELECT o.balance,
        (SELECT sum(amount) FROM billing_ledgerentry WHERE organization_id = o.id),
        (SELECT coalesce(sum(cost), 0) FROM billing_generation WHERE organization_id = o.id)
        + (SELECT coalesce(sum(cost), 0) FROM billing_deadletter
           WHERE organization_id = o.id AND charge_posted)
    FROM accounts_organization o WHERE o.id = %s
"""


def _assert_balance(conn: psycopg.Connection, org: int) -> None:
    row = conn.execute(BALANCE, [org]).fetchone()
    assert row is not None
    balance, total, spent = row
    assert balance == total
    assert balance == Decimal(1000) - spent


def _assert_no_open_reservation(redis_url: str, org: int, wait: float = 15) -> None:
    """Open: held and not yet expired (a killed gateway's expire after the reservation TTL)."""
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    key = org_key(org, "adm", "resexp")
    deadline = time.monotonic() + wait
    while (held := client.zrangebyscore(key, int(time.time() * 1000), "+inf")) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.25)
    assert held == []


@dataclass(frozen=True)
class Booked:
    """A record as the books hold it, with what the ledger charged for it."""

    api: str
    model: str
    provider: str
    streamed: bool
    status: str
    prompt: int
    completion: int
    cached: int
    """Prompt tokens read from or written to the cache: none, as the fake reports none."""
    cost: Decimal
    charged: Decimal

    @property
    def tokens(self) -> Tokens:
        return self.prompt, self.completion


BOOKED = """
    SELECT g.request_id, g.api, g.model, g.provider, g.streamed, g.status,
        g.prompt_tokens, g.completion_tokens, g.cached_tokens + g.cache_write_tokens, g.cost,
        (SELECT -coalesce(sum(l.amount), 0) FROM billing_ledgerentry l
         WHERE l.idempotency_key = 'charge:' || g.request_id)
    FROM billing_generation g WHERE g.organization_id = %s
"""
OFFERED_BY_MODEL = {offered.model: offered for offered in OFFERED}


def booked(database_url: str, slug: str) -> dict[str, Booked]:
    """The organization's records by request id."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(BOOKED, [org_id(database_url, slug)]).fetchall()
    return {request_id: Booked(*columns) for request_id, *columns in rows}


def assert_each_api_books(
    database_url: str, slug: str, outcomes: list[Outcome], tokens: dict[str, Tokens]
) -> None:
    """Once every answered call is recorded (`assert_books_balance`): what is wrong in the
    books, per API, is nothing. `tokens`: what each model's calls report. A parked record
    (a dead letter) has no generation to check."""
    records = booked(database_url, slug)
    wrong: dict[str, list[str]] = {}
    for outcome in outcomes:
        record = records.get(outcome.request_id or "")
        if outcome.complete and record and (fault := answer_fault(outcome, record, tokens)):
            wrong.setdefault(outcome.api, []).append(f"{outcome.request_id}: {fault}")
    for request_id, record in records.items():
        if fault := cost_fault(record):
            wrong.setdefault(record.api, []).append(f"{request_id}: {fault}")
    assert wrong == {}, wrong


def answer_fault(outcome: Outcome, record: Booked, tokens: dict[str, Tokens]) -> str | None:
    """What an answered call's record gets wrong: its API, model and whether it streamed; the
    id a 200 carries; a served call's tokens, those its model reported."""
    kind = outcome.kind
    if (record.api, record.model, record.streamed) != (kind.api.name, kind.model, kind.streamed):
        return f"recorded as {record}"
    prefix = kind.api.id_prefix
    carried = None if prefix is None else prefix + (outcome.request_id or "")
    if outcome.status == 200 and carried is not None and outcome.answer_id != carried:
        return f"answered with id {outcome.answer_id}"
    if record.status == "success" and record.tokens != tokens[kind.model]:
        return f"tokens {record.tokens}, reported {tokens[kind.model]}"
    return None


def cost_fault(record: Booked) -> str | None:
    """What a record's cost gets wrong: its tokens at its offering's prices (nothing if no
    offering served it), and the ledger's charge for it."""
    offered = OFFERED_BY_MODEL[record.model]
    if record.cached:
        return f"{record.cached} tokens of cache, which the fake never reports"
    cost = offered.cost(*record.tokens) if record.provider == offered.provider else Decimal(0)
    if (record.cost, record.charged) != (cost, cost):
        return f"cost {record.cost} charged {record.charged}, {record.tokens} cost {cost}"
    return None
