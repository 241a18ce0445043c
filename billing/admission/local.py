"""The admission store of one process (embedded mode, or while Redis cannot be reached)."""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from billing.admission.base import (
    WINDOW_MS,
    AdmissionStore,
    AdmitRequest,
    KeySpend,
    NeedBalance,
    NeedSpend,
    RateState,
    Refused,
    Ticket,
    rate_state,
)

SETTLED_KEPT_MS = 60_000
"""How long a settle is remembered when no read of Redis comes after it (one that comes
forgets it at once)."""


@dataclass(frozen=True, slots=True)
class Backlog:
    """What Redis holds against one organization's balance: the total of its unposted charges,
    and its open reservations (amount, meters space-separated, expiry in ms, by id)."""

    unposted: int
    reserved: dict[str, tuple[int, str, int]]


@dataclass
class _Book:
    """One organization's balance and what is held against it: reservations of calls under
    way and the charges of calls served but not yet in the ledger (held until it has them,
    however long), this process's own and those Redis held when last read (its backlog).
    Their sum is kept as they change and the reservations' expiries in a heap, so a call costs
    the same however many are held."""

    balance: int | None = None
    """None until loaded from the ledger: charges may be held before (the journal's)."""
    entry_id: int = -1
    reserved: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    unposted: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Each unposted charge: its cost and when it was held."""
    mirrored: set[str] = field(default_factory=set)
    """The reservations among `reserved` that are Redis's, not this process's own."""
    settled: OrderedDict[str, int] = field(default_factory=OrderedDict)
    """Redis's reservations this process has settled there lately, by id, with when Redis
    answered (this process's monotonic clock, in ms), oldest first: a read of Redis begun
    before then still lists them, and is not followed."""
    shared_unposted: int = 0
    """The total of the charges Redis held as unposted."""
    held: int = 0
    by_meter: dict[str, int] = field(default_factory=dict)
    """What the reservations hold on each meter (`AdmitRequest.meters`)."""
    expiries: list[tuple[int, str]] = field(default_factory=list)
    """(expires, id) of each reservation; one that has gone or moved on is skipped when it
    comes up, and the heap is built again from the reservations once it holds more than twice
    as many as they are."""

    def reserve(self, rid: str, amount: int, meters: str, expires: int) -> None:
        self.release(rid)
        self.mirrored.discard(rid)
        self.reserved[rid] = (amount, meters, expires)
        self.held += amount
        self._meters(meters, amount)
        self._push(expires, rid)

    def renew(self, rid: str, expires: int) -> None:
        amount, tag, _ = self.reserved[rid]
        self.reserved[rid] = (amount, tag, expires)
        self._push(expires, rid)

    def release(self, rid: str) -> bool:
        """The reservation taken off; whether it was held."""
        held = self.reserved.pop(rid, None)
        if held is not None:
            self.held -= held[0]
            self._meters(held[1], -held[0])
        return held is not None

    def _meters(self, meters: str, amount: int) -> None:
        for meter in meters.split():
            self.by_meter[meter] = self.by_meter.get(meter, 0) + amount

    def mirror(self, backlog: Backlog, read_ms: int) -> None:
        """Hold what Redis holds now (read at `read_ms`), in place of what it held when last
        read."""
        for rid in self.mirrored - backlog.reserved.keys():
            self.drop(rid)
        self._forget_settled(read_ms)
        for rid, (amount, meters, expires) in backlog.reserved.items():
            if rid in self.settled:
                continue
            if rid in self.mirrored:
                if self.reserved[rid][2] != expires:
                    self.renew(rid, expires)
            elif rid not in self.reserved:  # one of this process's own is counted once
                self.reserve(rid, amount, meters, expires)
                self.mirrored.add(rid)
        self.held += backlog.unposted - self.shared_unposted
        self.shared_unposted = backlog.unposted

    def drop(self, rid: str) -> None:
        self.mirrored.discard(rid)
        self.release(rid)

    def settled_in_redis(self, rid: str, cost: int, now_ms: int) -> None:
        """A call of this process that Redis admitted and has now settled: its reservation,
        as Redis held it when last read, becomes the unposted charge Redis now holds."""
        if rid in self.mirrored:
            self.drop(rid)
        self.settled[rid] = now_ms
        self._forget_settled(now_ms - SETTLED_KEPT_MS)
        self.held += cost
        self.shared_unposted += cost

    def _forget_settled(self, before_ms: int) -> None:
        settled = self.settled
        while settled and next(iter(settled.values())) < before_ms:
            settled.popitem(last=False)

    def hold_unposted(self, rid: str, cost: int, now_ms: int) -> None:
        held = self.unposted.get(rid)
        if held is not None and held[0] == cost:
            return  # held already (the journal's replay holds what it reads, each time)
        self.posted(rid)
        self.unposted[rid] = (cost, now_ms)
        self.held += cost

    def posted(self, rid: str) -> None:
        held = self.unposted.pop(rid, None)
        if held is not None:
            self.held -= held[0]

    def expire(self, now_ms: int) -> None:
        expiries = self.expiries
        while expiries and expiries[0][0] <= now_ms:
            expires, rid = heapq.heappop(expiries)
            reserved = self.reserved.get(rid)
            if reserved is not None and reserved[2] == expires:
                self.drop(rid)

    def available(self) -> int:
        return (self.balance or 0) - self.held

    def _push(self, expires: int, rid: str) -> None:
        heapq.heappush(self.expiries, (expires, rid))
        if len(self.expiries) > 2 * len(self.reserved) + 64:
            self.expiries = [(e, r) for r, (_, _, e) in self.reserved.items()]
            heapq.heapify(self.expiries)


class LocalStore(AdmissionStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._books: dict[int, _Book] = {}
        self._spent: dict[int, dict[str, int]] = {}
        """Each meter's spend, by organization id and meter, once loaded: from the ledger when
        an outage begins, with this process's own charges added as they are settled."""
        self._spent_until: dict[int, dict[str, int]] = {}
        """When each loaded meter of a window is let go (epoch ms), as Redis lets its go: a day
        after its window ends."""
        self._windows: dict[str, tuple[int, int]] = {}

    async def admit(self, request: AdmitRequest) -> Ticket:
        with self._lock:
            book = self._books.get(request.org_id)
            if book is None or book.balance is None:
                raise NeedBalance
            spent = self._spent.get(request.org_id, {})
            missing = [one.meter for one in request.limits if one.meter not in spent]
            if missing:
                raise NeedSpend(tuple(missing))
            rate = self._count(request.key_tag, request.rate_limit, request.now_ms)
            if rate.limit is not None and rate.remaining is not None and rate.remaining < 0:
                raise Refused("rate", rate)
            book.expire(request.now_ms)
            self._check_credit(request, book, rate)
            meters = request.meters
            expires = request.now_ms + request.ttl_ms
            book.reserve(request.reservation_id, request.amount, " ".join(meters), expires)
            return Ticket(request.reservation_id, request.org_id, request.key_tag, request.amount,
                          rate, shared=False, meters=meters)  # fmt: skip

    def _check_credit(self, request: AdmitRequest, book: _Book, rate: RateState) -> None:
        if request.amount > 0 and book.available() < request.amount:
            raise Refused("credits", rate)
        for limit in request.limits:
            used = self._spent[request.org_id][limit.meter] + book.by_meter.get(limit.meter, 0)
            if used + request.amount > limit.amount:
                raise Refused("budget", rate, meter=limit.meter)

    async def count(self, org_id: int, key_tag: str, limit: int, now_ms: int) -> RateState:
        with self._lock:
            return self._count(key_tag, limit, now_ms)

    def _count(self, key_tag: str, limit: int, now_ms: int) -> RateState:
        if limit <= 0:
            return RateState()
        window = now_ms // WINDOW_MS
        current, count = self._windows.get(key_tag, (window, 0))
        count = count + 1 if current == window else 1
        self._windows[key_tag] = (window, count)
        return rate_state(limit, count, now_ms)

    async def renew(self, ticket: Ticket, now_ms: int, ttl_ms: int) -> bool:
        with self._lock:
            book = self._books.get(ticket.org_id)
            held = book.reserved.get(ticket.id) if book is not None else None
            if book is None or held is None or held[2] <= now_ms:
                return False
            book.renew(ticket.id, now_ms + ttl_ms)
            return True

    def settle(self, ticket: Ticket, cost: int, request_id: str, now_ms: int) -> None:
        """Also for a call Redis admitted that ends while Redis cannot take its settle: its
        reservation, as last read from Redis, is released here and its charge held."""
        with self._lock:
            book = self._books.setdefault(ticket.org_id, _Book())
            book.drop(ticket.id)
            if cost > 0:
                book.hold_unposted(request_id, cost, now_ms)
            self._add_spend(ticket, cost)

    def settled_in_redis(self, ticket: Ticket, cost: int, now_ms: int) -> None:
        """A call Redis admitted and settled: counted here as Redis now counts it, until Redis
        is read again, should it stop answering first."""
        with self._lock:
            book = self._books.get(ticket.org_id)
            if book is not None:
                book.settled_in_redis(ticket.id, cost, now_ms)
            self._add_spend(ticket, cost)

    def _add_spend(self, ticket: Ticket, cost: int) -> None:
        spent = self._spent.get(ticket.org_id)
        if spent is not None:
            for meter in ticket.held_on:
                if meter in spent:
                    spent[meter] += cost

    def hold(self, org_id: int, request_id: str, cost: int, now_ms: int) -> None:
        """Hold a charge the ledger does not have yet (a journaled record's) until it is
        posted; holding one already held changes nothing."""
        if cost > 0:
            with self._lock:
                self._books.setdefault(org_id, _Book()).hold_unposted(request_id, cost, now_ms)

    def mirror(self, backlogs: dict[int, Backlog], read_ms: int) -> None:
        """What Redis holds against each organization (read at `read_ms`, on the clock of
        `settled_in_redis`, while it answers): counted while it does not. An organization's
        meters' spends are then loaded afresh when next needed (from the ledger, which holds
        the charges Redis settled meanwhile), unless this process holds charges of its own the
        ledger does not have yet."""
        with self._lock:
            for org_id, backlog in backlogs.items():
                book = self._books.setdefault(org_id, _Book())
                book.mirror(backlog, read_ms)
                if not book.unposted:
                    self._spent.pop(org_id, None)
                    self._spent_until.pop(org_id, None)

    def posted(self, org_id: int, request_id: str, balance: int, entry_id: int) -> None:
        """A book that holds charges alone is left without a balance: the refresh keeps only
        the balances of the organizations this process admits calls of, so one taken from here
        would go stale, and its first call loads it afresh."""
        with self._lock:
            book = self._books.get(org_id)
            if book is not None:
                book.posted(request_id)
            if book is None or book.balance is not None:
                self._advance(org_id, balance, entry_id)

    def sync_balance(self, org_id: int, balance: int, entry_id: int) -> None:
        with self._lock:
            self._advance(org_id, balance, entry_id)

    def _advance(self, org_id: int, balance: int, entry_id: int) -> None:
        book = self._books.setdefault(org_id, _Book())
        if book.balance is None or entry_id > book.entry_id:
            book.balance, book.entry_id = balance, entry_id

    def knows(self, org_id: int) -> bool:
        """Whether this store holds anything of the organization: its balance (it has admitted
        its calls), or charges and reservations it counts against it."""
        return org_id in self._books

    def set_key_spend(self, org_id: int, key_tag: str, spent: int) -> None:
        self.set_key_spends([KeySpend(org_id, key_tag, spent)])

    def set_key_spends(self, spends: list[KeySpend]) -> None:
        """A meter already loaded keeps what it counts. Loading one lets go of its
        organization's meters whose windows ended more than a day ago, so a process that runs
        for months does not hold every window's meter of every budget."""
        now_ms = int(time.time() * 1000)
        with self._lock:
            for org_id in {one.org_id for one in spends}:
                self._let_go_of_ended(org_id, now_ms)
            for one in spends:
                self._spent.setdefault(one.org_id, {}).setdefault(one.tag, one.spent)
                if one.expires_ms:
                    self._spent_until.setdefault(one.org_id, {})[one.tag] = one.expires_ms

    def _let_go_of_ended(self, org_id: int, now_ms: int) -> None:
        until = self._spent_until.get(org_id)
        if not until:
            return
        spent = self._spent.get(org_id, {})
        for meter in [meter for meter, ends in until.items() if ends <= now_ms]:
            del until[meter]
            spent.pop(meter, None)

    def open_reservations(self, org_id: int, now_ms: int) -> dict[str, int]:
        """This store's own: those of Redis it holds as its backlog are Redis's to list."""
        with self._lock:
            book = self._books.get(org_id)
            if book is None:
                return {}
            held = book.reserved.items()
            return {r: a for r, (a, _, exp) in held if exp > now_ms and r not in book.mirrored}

    def unposted(self, org_id: int) -> dict[str, int]:
        with self._lock:
            book = self._books.get(org_id)
            return {rid: a for rid, (a, _) in book.unposted.items()} if book else {}

    def oldest_unposted(self, org_id: int, count: int) -> list[str]:
        with self._lock:
            book = self._books.get(org_id)
            held = book.unposted.items() if book else ()
            return [rid for rid, _ in heapq.nsmallest(count, held, key=lambda kv: kv[1][1])]
