"""The admission store's contract and its values. Amounts are whole nano-dollars."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RateState:
    """A key's request window: `limit` is None when the key has no limit."""

    limit: int | None = None
    remaining: int | None = None
    reset: int | None = None

    def headers(self) -> dict[str, str]:
        if self.limit is None:
            return {}
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.remaining or 0, 0)),
            "X-RateLimit-Reset": str(self.reset),
        }


@dataclass(frozen=True, slots=True)
class Ticket:
    """An admitted call's reservation."""

    id: str
    org_id: int
    key_tag: str
    amount: int
    rate: RateState
    shared: bool = True
    """Issued by the shared store (Redis); False for this process's own."""
    in_doubt: bool = False
    """Issued by this process's own store after Redis failed to answer the admission, which it
    may have carried out all the same: Redis is told to release it too, once it answers."""
    meters: tuple[str, ...] = ()
    """The meters the reservation is held on (`AdmitRequest.meters`); none read as the key's
    alone (a ticket journaled before budgets)."""

    @property
    def held_on(self) -> tuple[str, ...]:
        return self.meters or (self.key_tag,)


@dataclass(frozen=True, slots=True)
class Limit:
    """What a meter may count: a key's spend in all (its tag, e.g. `k12`), or a budget's scope
    in its window (`k12@d2026-12-06`, `m5@w2026-11-30`, `o@m2026-12-01`), in an organization."""

    meter: str
    amount: int


@dataclass(frozen=True, slots=True)
class AdmitRequest:
    reservation_id: str
    org_id: int
    key_tag: str
    amount: int
    rate_limit: int
    now_ms: int
    ttl_ms: int
    limits: tuple[Limit, ...] = ()
    """Every limit that covers the call: its reservation must fit within each."""

    @property
    def meters(self) -> tuple[str, ...]:
        """The meters its reservation is held on: its key's, then each limit's, once."""
        return tuple(dict.fromkeys((self.key_tag, *(one.meter for one in self.limits))))


class Refused(Exception):
    """Admission said no: `reason` is rate, credits or budget (`meter` names the limit's);
    `now_ms` the store's own time when it said so (None: this process's), which its rate
    window's reset is on."""

    def __init__(
        self, reason: str, rate: RateState, now_ms: int | None = None, meter: str | None = None
    ) -> None:
        super().__init__(reason)
        self.reason, self.rate, self.now_ms, self.meter = reason, rate, now_ms, meter


class NeedBalance(Exception):
    """The store holds no balance for this organization yet: load it from the ledger."""


class NeedSpend(Exception):
    """The store holds no spend for these meters yet: load it from the records."""

    def __init__(self, meters: tuple[str, ...]) -> None:
        super().__init__(*meters)
        self.meters = meters


@dataclass(frozen=True, slots=True)
class KeySpend:
    """A meter's spend as the ledger holds it (`spent`), and which of the charges the store
    holds for the meter the ledger has (`posted`, by request id); a window's meter is held
    until `expires_ms` (0: for good)."""

    org_id: int
    tag: str
    spent: int
    posted: tuple[str, ...] = ()
    expires_ms: int = 0


Posted = tuple[int, str, int, int]
"""A charge in the ledger: organization id, request id, ledger entry id, balance after it."""

WINDOW_MS = 60_000


def rate_state(limit: int, count: int, now_ms: int) -> RateState:
    if limit <= 0:
        return RateState()
    reset = (now_ms // WINDOW_MS + 1) * WINDOW_MS // 1000
    return RateState(limit, limit - count, reset)


class AdmissionStore(ABC):
    @abstractmethod
    async def admit(self, request: AdmitRequest) -> Ticket:
        """Count the request and reserve its amount; raises Refused, NeedBalance, NeedSpend."""

    @abstractmethod
    async def count(self, org_id: int, key_tag: str, limit: int, now_ms: int) -> RateState:
        """Count a request refused before admission against its key's window."""

    @abstractmethod
    async def renew(self, ticket: Ticket, now_ms: int, ttl_ms: int) -> bool:
        """Hold a reservation until `ttl_ms` from now (a live stream's, renewed while it runs);
        False when it is no longer held (settled, or already expired)."""

    @abstractmethod
    def settle(self, ticket: Ticket, cost: int, request_id: str, now_ms: int) -> None:
        """Release the reservation and hold the actual cost as an unposted charge."""

    @abstractmethod
    def posted(self, org_id: int, request_id: str, balance: int, entry_id: int) -> None:
        """The charge of request_id is in the ledger, whose balance after entry_id is balance."""

    def posted_many(self, posted: list[Posted]) -> None:
        """Several charges posted: (org id, request id, ledger entry id, balance after) each."""
        for org_id, request_id, entry_id, balance in posted:
            self.posted(org_id, request_id, balance, entry_id)

    @abstractmethod
    def sync_balance(self, org_id: int, balance: int, entry_id: int) -> None:
        """The ledger's balance after entry_id (kept only if newer than the one held)."""

    @abstractmethod
    def set_key_spend(self, org_id: int, key_tag: str, spent: int) -> None:
        """A meter's spend from the records, when the store holds none."""

    def set_key_spends(self, spends: list[KeySpend]) -> None:
        """Meters' spend from the ledger: a store that holds charges by meter (`keys_unposted`)
        adds those the ledger does not have to it."""
        for one in spends:
            self.set_key_spend(one.org_id, one.tag, one.spent)

    def keys_unposted(self, keys: list[tuple[int, str]]) -> list[list[str]]:
        """For each (organization id, meter), the request ids of the charges the store holds
        for the meter, posted or not; none for a store that counts them no other way."""
        return [[] for _ in keys]

    @abstractmethod
    def open_reservations(self, org_id: int, now_ms: int) -> dict[str, int]:
        """Reservations of calls in flight, by id."""

    @abstractmethod
    def unposted(self, org_id: int) -> dict[str, int]:
        """Settled charges not yet in the ledger, by request id."""

    @abstractmethod
    def oldest_unposted(self, org_id: int, count: int) -> list[str]:
        """The request ids of the `count` charges settled longest ago and not yet posted."""
