"""What a stream's reservation carries in Redis once its provider has started answering: the
record its call would have if it stopped now (its intent), brought up to date as content is
delivered. A reservation that ends without its settle (its process died) is settled from its
intent by the sweep, not released: what was delivered is billed, never nothing.

The settle script deletes a call's intent with its reservation, so the sweep finds only those
of calls that never settled, and a settle that does happen is the call's one record and charge.
The sweep runs the settle script's steps for them, in one script per slot group: each group's
intents are indexed by when their reservation would expire (`started`), in the group's slot."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from billing.admission.meter_scripts import METERS
from core.redis_client import SyncClient
from core.redis_keys import SLOT_GROUPS, group_tag, org_group, org_key, records_stream

AREA = "adm"
SWEEP_BATCH = 100

# Expiries are on Redis's clock, as the reservations' own are.
NOW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
"""

# KEYS: reservations hash, intents hash, the group's started index
# ARGV: reservation id, intent ("cost:meters:request id\nrecord", the meters space-separated),
#       index member, ttl ms
MARK = (
    NOW
    + """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[3])
return 1
"""
)

# KEYS: the group's started index, the group's records stream
# ARGV: the group's key prefix ("momor:adm:<tag>:"), how many at most
# A reservation renewed since its intent was indexed is looked at again when it would expire;
# one that is gone or expired is settled as SETTLE settles it, from its intent.
SWEEP = (
    NOW
    + METERS
    + """
local swept = 0
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  local org, rid = string.match(member, '^(%d+):(.*)$')
  local base = ARGV[1] .. org .. ':'
  local expires = redis.call('ZSCORE', base .. 'resexp', rid)
  if expires and tonumber(expires) > now then
    redis.call('ZADD', KEYS[1], expires, member)
  else
    local intent = redis.call('HGET', base .. 'intent', rid)
    if intent then
      local cost, meters, request, record =
        string.match(intent, '^(%d+):([^:]*):([^\\n]*)\\n(.*)$')
      local held = redis.call('HGET', base .. 'res', rid)
      if held then
        local amount, held_on = string.match(held, '^(-?%d+):(.*)$')
        redis.call('DECRBY', base .. 'restot', amount)
        release_meters(base, held_on, amount)
        redis.call('HDEL', base .. 'res', rid)
        redis.call('ZREM', base .. 'resexp', rid)
      end
      cost = tonumber(cost)
      if cost > 0 and redis.call('HSETNX', base .. 'unp', request, cost) == 1 then
        redis.call('ZADD', base .. 'unpexp', now, request)
        redis.call('INCRBY', base .. 'unptot', cost)
        charge_meters(base, meters, request, cost)
      end
      redis.call('XADD', KEYS[2], '*', 'r', record)
      redis.call('HDEL', base .. 'intent', rid)
      swept = swept + 1
    end
    redis.call('ZREM', KEYS[1], member)
  end
end
return swept
"""
)


def intents_key(org_id: int) -> str:
    return org_key(org_id, AREA, "intent")


@lru_cache(maxsize=SLOT_GROUPS)
def started_key(group: int) -> str:
    return f"momor:{AREA}:{group_tag(group)}:started"


@dataclass(frozen=True, slots=True)
class Intent:
    """A stream's call as it stands: the record it would have if it stopped now, and its cost."""

    org_id: int
    reservation_id: str
    meters: tuple[str, ...]
    request_id: str
    cost: int
    payload: bytes

    def keys(self) -> list[str]:
        group = org_group(self.org_id)
        return [org_key(self.org_id, AREA, "res"), intents_key(self.org_id), started_key(group)]

    def args(self, ttl_ms: int) -> list[Any]:
        value = f"{self.cost}:{' '.join(self.meters)}:{self.request_id}\n".encode() + self.payload
        return [self.reservation_id, value, f"{self.org_id}:{self.reservation_id}", ttl_ms]


def sweep_abandoned(client: SyncClient) -> int:
    """Settle, from their intents, the reservations of streams that never settled, in every slot
    group; how many."""
    sweep = client.register_script(SWEEP)
    swept = 0
    for group in range(SLOT_GROUPS):
        keys = [started_key(group), records_stream(group)]
        swept += int(sweep(keys, [f"momor:{AREA}:{group_tag(group)}:", SWEEP_BATCH]))
    return swept
