"""The admission store shared by every gateway process, in Redis: each operation is one Lua
script, so counting, expiring, checking and reserving happen atomically. Every key a script
touches is its organization's (`core.redis_keys`), so each script runs on one slot of a
Redis Cluster, records stream included."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError

from billing.admission.base import (
    WINDOW_MS,
    AdmissionStore,
    AdmitRequest,
    KeySpend,
    NeedBalance,
    NeedSpend,
    Posted,
    RateState,
    Refused,
    Ticket,
    rate_state,
)
from billing.admission.coalesce import Coalescer, sha_of
from billing.admission.intents import MARK, Intent, intents_key
from billing.admission.meter_scripts import METERS
from billing.admission.shards import AsyncShards, AsyncTarget, evalsha_many_sync
from core.breaker import REDIS
from core.redis_client import (
    SyncClient,
    async_cluster_client,
    cluster_nodes,
    is_cluster,
    sync_client,
)
from core.redis_keys import org_group, org_key, org_prefix, records_stream
from core.redis_pipeline import Address, PipelinedRedis

AREA = "adm"
ADVANCE_IDS = 500
"""The most charges one ADVANCE script takes."""

# Expiries and rate windows run on Redis's clock, which every gateway process reads alike (a
# process's own clock may be minutes off). Scripts replicate their effects, so reading it in a
# script that writes is allowed.
NOW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
"""

# A key's requests in the current window of `window_ms`: the window's number and its count,
# in one hash that expires with the window.
WINDOW = """
local function window_count(key, window_ms)
  local window = math.floor(now / window_ms)
  if tonumber(redis.call('HGET', key, 'w') or '-1') ~= window then
    redis.call('HSET', key, 'w', window, 'c', 0)
    redis.call('PEXPIRE', key, (window + 1) * window_ms - now)
  end
  return redis.call('HINCRBY', key, 'c', 1)
end
"""

# A reservation is held as "amount:meters" (`meter_scripts`). Amounts are never below zero
# now; the scripts still read a minus sign, so that one held from before that is released
# rather than failing the script.
# KEYS: balance hash, reservations hash, reservation expiries zset, reserved total,
#       unposted hash, unposted expiries zset, unposted total, rate window
# ARGV: reservation id, amount, ttl ms, rate limit, window ms, the organization's key prefix,
#       the meters held on (space-separated), then each limit's meter and amount
# Answers the verdict, the window's count and Redis's time (ms); then the meters whose spend
# is to be loaded, or the meter whose limit refused.
ADMIT = (
    NOW
    + WINDOW
    + METERS
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'load', 0, now} end
local base = ARGV[6]
local missing = {}
for i = 8, #ARGV, 2 do
  if redis.call('EXISTS', base .. 'spent:' .. ARGV[i]) == 0 then
    missing[#missing + 1] = ARGV[i]
  end
end
if #missing > 0 then return {'loadspend', 0, now, missing} end
local count = 0
if tonumber(ARGV[4]) > 0 then
  count = window_count(KEYS[8], tonumber(ARGV[5]))
  if count > tonumber(ARGV[4]) then return {'rate', count, now} end
end
for _, rid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  local held = redis.call('HGET', KEYS[2], rid)
  if held then
    local amount, meters = string.match(held, '^(-?%d+):(.*)$')
    redis.call('DECRBY', KEYS[4], amount)
    release_meters(base, meters, amount)
    redis.call('HDEL', KEYS[2], rid)
  end
  redis.call('ZREM', KEYS[3], rid)
end
local amount = tonumber(ARGV[2])
local balance = tonumber(redis.call('HGET', KEYS[1], 'balance'))
local held = tonumber(redis.call('GET', KEYS[4]) or '0')
held = held + tonumber(redis.call('GET', KEYS[7]) or '0')
if amount > 0 and balance - held < amount then return {'credits', count, now} end
for i = 8, #ARGV, 2 do
  local used = tonumber(redis.call('GET', base .. 'spent:' .. ARGV[i]))
  used = used + tonumber(redis.call('GET', base .. 'keyres:' .. ARGV[i]) or '0')
  if used + amount > tonumber(ARGV[i + 1]) then return {'budget', count, now, ARGV[i]} end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[7])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
redis.call('INCRBY', KEYS[4], amount)
reserve_meters(base, ARGV[7], amount)
return {'ok', count, now}
"""
)

# KEYS: rate window; ARGV: window ms. Answers the window's count and Redis's time (ms).
COUNT = (
    NOW
    + WINDOW
    + """
return {window_count(KEYS[1], tonumber(ARGV[1])), now}
"""
)

# KEYS: reservations hash, reservation expiries; ARGV: reservation id, ttl ms
RENEW = (
    NOW
    + """
local expires = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expires or tonumber(expires) <= now then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1])
return 1
"""
)

# KEYS: reservations hash, reservation expiries, reserved total, unposted hash, unposted index
#       (by the time each was held), unposted total, records stream, stream intents
#       (billing.admission.intents: settled here, never swept)
# ARGV: reservation id ('' for none), request id, cost, now ms, the call's record ('' for none),
#       the organization's key prefix, the meters the call is charged on (space-separated)
# The record goes to the stream in the same script that settles the call, so the charge held
# as unposted and the record that will post it are durable together. An unposted charge is
# held until the ledger has it, however long storing takes: nothing expires it. A meter whose
# spend is counted here also holds the charge by request id, until KEY_SPEND finds it posted.
SETTLE = (
    METERS
    + """
local base = ARGV[6]
if ARGV[1] ~= '' then
  local held = redis.call('HGET', KEYS[1], ARGV[1])
  if held then
    local amount, meters = string.match(held, '^(-?%d+):(.*)$')
    redis.call('DECRBY', KEYS[3], amount)
    release_meters(base, meters, amount)
    redis.call('HDEL', KEYS[1], ARGV[1])
    redis.call('ZREM', KEYS[2], ARGV[1])
  end
  redis.call('HDEL', KEYS[8], ARGV[1])
end
local cost = tonumber(ARGV[3])
if cost > 0 and redis.call('HSETNX', KEYS[4], ARGV[2], cost) == 1 then
  redis.call('ZADD', KEYS[5], tonumber(ARGV[4]), ARGV[2])
  redis.call('INCRBY', KEYS[6], cost)
  charge_meters(base, ARGV[7], ARGV[2], cost)
end
if ARGV[5] ~= '' then redis.call('XADD', KEYS[7], '*', 'r', ARGV[5]) end
return 1
"""
)

# A meter's spend from the ledger: what the ledger holds for it, plus the charges held for it
# here that the ledger does not have yet; a window's meter expires a day after its window.
# KEYS: meter spent, meter unposted
# ARGV: the ledger's spend, when it expires (ms; 0: never), then the held request ids it has
KEY_SPEND = """
for i = 3, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
local spent = tonumber(ARGV[1])
for _, cost in ipairs(redis.call('HVALS', KEYS[2])) do spent = spent + tonumber(cost) end
redis.call('SET', KEYS[1], spent)
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
  redis.call('PEXPIREAT', KEYS[2], ARGV[2])
end
return 1
"""

# Every charge of one organization that a batch of records posted, in one script: a script per
# charge held Redis, and every gateway's admission behind it, for the length of a batch's
# Lua calls.
# KEYS: balance hash, unposted hash, unposted expiries, unposted total
# ARGV: balance, entry id, then the request ids posted
ADVANCE = """
if #ARGV > 2 then
  for i = 3, #ARGV do
    local held = redis.call('HGET', KEYS[2], ARGV[i])
    if held then redis.call('DECRBY', KEYS[4], held) end
  end
  redis.call('HDEL', KEYS[2], unpack(ARGV, 3))
  redis.call('ZREM', KEYS[3], unpack(ARGV, 3))
end
local current = tonumber(redis.call('HGET', KEYS[1], 'entry') or '-1')
if tonumber(ARGV[2]) > current then
  redis.call('HSET', KEYS[1], 'balance', ARGV[1], 'entry', ARGV[2])
end
return 1
"""


@lru_cache(maxsize=65_536)  # built on every call otherwise: the hot path
def _org_keys(org_id: int) -> dict[str, str]:
    return {
        name: org_key(org_id, AREA, name)
        for name in ("balance", "res", "resexp", "restot", "unp", "unpexp", "unptot")
    }


@lru_cache(maxsize=65_536)
def _base(org_id: int) -> str:
    """The prefix of the organization's keys, from which the scripts name its meters' counters."""
    return org_prefix(org_id, AREA)


def _text(reply: bytes | str) -> str:
    """The sync client answers bytes (no `decode_responses`); redis-py types a reply as either."""
    return reply.decode() if isinstance(reply, bytes) else reply


def _members(found: Iterable[object]) -> list[str]:
    """A sorted set's members, read without scores."""
    return [_text(member) for member in found if isinstance(member, bytes | str)]


def _spent_key(org_id: int, meter: str) -> str:
    """A meter's spend so far (a key's, or a budget's in its window): in its organization's
    slot."""
    return org_key(org_id, AREA, "spent", meter)


def key_unposted_key(org_id: int, meter: str) -> str:
    """The charges held for the meter that the ledger does not have yet, by request id."""
    return org_key(org_id, AREA, "keyunp", meter)


@lru_cache(maxsize=65_536)
def _window_key(org_id: int, tag: str) -> str:
    return org_key(org_id, AREA, "window", tag)


@lru_cache(maxsize=65_536)
def _admit_keys(org_id: int) -> tuple[str, ...]:
    """Every key of ADMIT but the rate window."""
    org = _org_keys(org_id)
    names = ("balance", "res", "resexp", "restot", "unp", "unpexp", "unptot")
    return tuple(org[name] for name in names)


@lru_cache(maxsize=65_536)
def _settle_keys(org_id: int) -> tuple[str, ...]:
    org = _org_keys(org_id)
    stream = records_stream(org_group(org_id))
    return (org["res"], org["resexp"], org["restot"], org["unp"], org["unpexp"],
            org["unptot"], stream, intents_key(org_id))  # fmt: skip


def admit_keys(request: AdmitRequest) -> list[str]:
    return [*_admit_keys(request.org_id), _window_key(request.org_id, request.key_tag)]


def admit_args(request: AdmitRequest) -> list[Any]:
    args = [
        request.reservation_id,
        request.amount,
        request.ttl_ms,
        request.rate_limit,
        WINDOW_MS,
        _base(request.org_id),
        " ".join(request.meters),
    ]
    for limit in request.limits:
        args += [limit.meter, limit.amount]
    return args


def renew_keys(ticket: Ticket) -> list[str]:
    org = _org_keys(ticket.org_id)
    return [org["res"], org["resexp"]]


@dataclass(frozen=True, slots=True)
class Settlement:
    """What the settle script needs for one finished call; `ticket` is None for a call refused
    before it was admitted, `payload` empty to settle without handing a record off."""

    org_id: int
    key_tag: str
    ticket: Ticket | None
    cost: int
    request_id: str
    payload: bytes = b""

    @property
    def meters(self) -> tuple[str, ...]:
        """The meters its cost is counted on: its reservation's, else its key's."""
        return self.ticket.held_on if self.ticket is not None else (self.key_tag,)

    def keys(self) -> list[str]:
        return list(_settle_keys(self.org_id))

    def args(self, now_ms: int) -> list[Any]:
        reservation = self.ticket.id if self.ticket is not None else ""
        return [reservation, self.request_id, self.cost, now_ms, self.payload,
                _base(self.org_id), " ".join(self.meters)]  # fmt: skip


class RedisStore(AdmissionStore):
    def __init__(self, url: str) -> None:
        self.url = url
        timeout = settings.MOMOR_REDIS_TIMEOUT_SECONDS
        self.sync: SyncClient = sync_client(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self._async: dict[asyncio.AbstractEventLoop, AsyncTarget] = {}
        self._scripts = Coalescer(self._client, REDIS)

    def _client(self) -> AsyncTarget:
        loop = asyncio.get_running_loop()
        target = self._async.get(loop)
        if target is None:
            target = self._async[loop] = self._new_target()
        return target

    def _new_target(self) -> AsyncTarget:
        timeout = settings.MOMOR_REDIS_TIMEOUT_SECONDS
        if not is_cluster(self.url):
            return AsyncTarget(PipelinedRedis(Address.of_url(self.url), timeout))
        cluster = async_cluster_client(
            self.url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        return AsyncShards(cluster, self._shard_connection)

    def _shard_connection(self, host: str, port: int) -> PipelinedRedis:
        """The loop's connection to one shard of the cluster."""
        _, options = cluster_nodes(self.url)
        address = Address(
            host=host, port=port, username=options.get("username"),
            password=options.get("password"), tls=options["ssl"],
        )  # fmt: skip
        return PipelinedRedis(address, settings.MOMOR_REDIS_TIMEOUT_SECONDS)

    def _run_sync(self, calls: list[tuple[str, list[str], list[Any]]]) -> list[Any]:
        """Scripts from a thread, in one pipeline (one per shard on a cluster); a script a
        shard does not know yet is loaded and run again."""
        shas = [(sha_of(script), keys, args) for script, keys, args in calls]
        results = evalsha_many_sync(self.sync, shas)
        missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
        if missing:
            for script in {calls[i][0] for i in missing}:
                self.sync.script_load(script)
            again = evalsha_many_sync(self.sync, [shas[i] for i in missing])
            for i, result in zip(missing, again, strict=True):
                results[i] = result
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    async def admit(self, request: AdmitRequest) -> Ticket:
        verdict, count, now_ms, *named = await self._run(
            ADMIT, admit_keys(request), admit_args(request)
        )
        rate = rate_state(request.rate_limit, int(count), int(now_ms))
        return self._ticket(_text(verdict), request, rate, int(now_ms), named)

    @staticmethod
    def _ticket(
        verdict: str, request: AdmitRequest, rate: RateState, now_ms: int, named: list[Any]
    ) -> Ticket:
        if verdict == "load":
            raise NeedBalance
        if verdict == "loadspend":
            raise NeedSpend(tuple(_text(meter) for meter in named[0]))
        if verdict != "ok":
            raise Refused(verdict, rate, now_ms, _text(named[0]) if named else None)
        return Ticket(request.reservation_id, request.org_id, request.key_tag, request.amount,
                      rate, meters=request.meters)  # fmt: skip

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        return await self._scripts.run(script, keys, args)

    async def count(self, org_id: int, key_tag: str, limit: int, now_ms: int) -> RateState:
        """`now_ms` is not read: the window is Redis's."""
        if limit <= 0:
            return RateState()
        count, redis_ms = await self._run(COUNT, [_window_key(org_id, key_tag)], [WINDOW_MS])
        return rate_state(limit, int(count), int(redis_ms))

    async def renew(self, ticket: Ticket, now_ms: int, ttl_ms: int) -> bool:
        """`now_ms` is not read: the expiry is on Redis's clock."""
        held = await self._run(RENEW, renew_keys(ticket), [ticket.id, ttl_ms])
        return bool(held)

    def hand_off(self, settlement: Settlement, now_ms: int) -> asyncio.Future[Any]:
        """Settle a finished call and append its record to the records stream, in one script
        sent with the other calls of this turn of the event loop (whether or not the future
        is awaited)."""
        return self._scripts.submit(SETTLE, settlement.keys(), settlement.args(now_ms))

    def mark(self, intent: Intent, ttl_ms: int) -> asyncio.Future[Any]:
        """Hold a stream's intent with its reservation (nothing if that is no longer held)."""
        return self._scripts.submit(MARK, intent.keys(), intent.args(ttl_ms))

    def hand_off_many(self, settlements: list[Settlement], now_ms: int) -> None:
        """The same for several calls at once, from a thread (the journal's replay)."""
        if settlements:
            calls = [(SETTLE, one.keys(), one.args(now_ms)) for one in settlements]
            self._run_sync(calls)

    def settle(self, ticket: Ticket, cost: int, request_id: str, now_ms: int) -> None:
        settlement = Settlement(ticket.org_id, ticket.key_tag, ticket, cost, request_id)
        self._run_sync([(SETTLE, settlement.keys(), settlement.args(now_ms))])

    def posted(self, org_id: int, request_id: str, balance: int, entry_id: int) -> None:
        self.posted_many([(org_id, request_id, entry_id, balance)])

    def posted_many(self, posted: list[Posted]) -> None:
        """One script per organization (per ADVANCE_IDS of its charges), its latest balance."""
        if posted:
            self._run_sync(list(_advances(posted)))

    def sync_balance(self, org_id: int, balance: int, entry_id: int) -> None:
        self._run_sync([(ADVANCE, advance_keys(org_id), [balance, entry_id])])

    def set_key_spend(self, org_id: int, key_tag: str, spent: int) -> None:
        self.set_key_spends([KeySpend(org_id, key_tag, spent)])

    def set_key_spends(self, spends: list[KeySpend]) -> None:
        """In one pipeline (one per shard on a cluster)."""
        if spends:
            self._run_sync([_key_spend(one) for one in spends])

    def keys_unposted(self, keys: list[tuple[int, str]]) -> list[list[str]]:
        pipeline = self.sync.pipeline(transaction=False)
        for org_id, tag in keys:
            pipeline.hkeys(key_unposted_key(org_id, tag))
        return [[_text(rid) for rid in held] for held in pipeline.execute()]

    def open_reservations(self, org_id: int, now_ms: int) -> dict[str, int]:
        """`now_ms` is not read: what is live is what has not expired on Redis's clock."""
        org = _org_keys(org_id)
        seconds, micros = self.sync.time()
        redis_ms = seconds * 1000 + micros // 1000
        live = set(_members(self.sync.zrangebyscore(org["resexp"], redis_ms + 1, "+inf")))
        held = self.sync.hgetall(org["res"])
        return {
            _text(rid): int(_text(value).split(":", 1)[0])
            for rid, value in held.items()
            if _text(rid) in live
        }

    def oldest_unposted(self, org_id: int, count: int) -> list[str]:
        found = self.sync.zrange(_org_keys(org_id)["unpexp"], 0, count - 1)
        return _members(found)

    def unposted(self, org_id: int) -> dict[str, int]:
        held = self.sync.hgetall(_org_keys(org_id)["unp"])
        return {_text(rid): int(value) for rid, value in held.items()}


def advance_keys(org_id: int) -> list[str]:
    org = _org_keys(org_id)
    return [org["balance"], org["unp"], org["unpexp"], org["unptot"]]


def _advances(posted: list[Posted]) -> Iterator[tuple[str, list[str], list[Any]]]:
    """ADVANCE for each organization's charges, ADVANCE_IDS at a time, with the balance after
    the latest of its entries."""
    by_org: dict[int, list[Posted]] = {}
    for one in posted:
        by_org.setdefault(one[0], []).append(one)
    for org_id, charges in by_org.items():
        _, _, entry_id, balance = max(charges, key=lambda charge: charge[2])
        ids = [request_id for _, request_id, _, _ in charges if request_id]
        for start in range(0, max(len(ids), 1), ADVANCE_IDS):
            chunk = ids[start : start + ADVANCE_IDS]
            yield ADVANCE, advance_keys(org_id), [balance, entry_id, *chunk]


def _key_spend(spend: KeySpend) -> tuple[str, list[str], list[Any]]:
    keys = [_spent_key(spend.org_id, spend.tag), key_unposted_key(spend.org_id, spend.tag)]
    return KEY_SPEND, keys, [spend.spent, spend.expires_ms, *spend.posted]
