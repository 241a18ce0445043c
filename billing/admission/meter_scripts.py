"""The Lua every script that holds or settles a reservation shares for its meters: a key's own
counters and each budget's in its window, all in the organization's slot (`base` is its key
prefix, `org_prefix(org_id, "adm")`). A reservation is held as "amount:meters", its meters
space-separated, so whichever script ends it (a settle, an expiry, the sweep) releases it from
each. A meter's spend is counted only once loaded (`spent:<meter>`); a window's counters expire
with its spend."""

from __future__ import annotations

METERS = """
local function release_meters(base, meters, amount)
  for meter in string.gmatch(meters, '%S+') do
    redis.call('DECRBY', base .. 'keyres:' .. meter, amount)
  end
end
local function charge_meters(base, meters, request, cost)
  for meter in string.gmatch(meters, '%S+') do
    local spent = base .. 'spent:' .. meter
    if redis.call('EXISTS', spent) == 1 then
      local held = base .. 'keyunp:' .. meter
      redis.call('INCRBY', spent, cost)
      redis.call('HSET', held, request, cost)
      local ttl = redis.call('PTTL', spent)
      if ttl > 0 then redis.call('PEXPIRE', held, ttl) end
    end
  end
end
local function reserve_meters(base, meters, amount)
  for meter in string.gmatch(meters, '%S+') do
    local reserved = base .. 'keyres:' .. meter
    redis.call('INCRBY', reserved, amount)
    local ttl = redis.call('PTTL', base .. 'spent:' .. meter)
    if ttl > 0 then redis.call('PEXPIRE', reserved, ttl) end
  end
end
"""
