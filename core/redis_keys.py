"""How Momor names its Redis keys, so that every key one script touches lies in one slot of a
Redis Cluster.

A script runs on one shard, over keys of one hash slot; Redis Cluster hashes only the part of
a key between the first `{` and the next `}` (its hash tag). So every key that belongs to an
organization carries the organization's tag, made here and nowhere else: `org_key(7, "adm",
"balance")` is `momor:adm:{o3}:7:balance`. An organization's tag is that of its slot group:
organizations are spread over `SLOT_GROUPS` groups (by id), and each group's tag hashes to a
slot in its own sixteenth of the slot space, so the groups spread evenly over any cluster whose
shards hold contiguous, even slot ranges (as `redis-cli --cluster create` lays them out). The
records stream of a group carries the same tag (`records_stream`), which lets the settle
script append a call's record in the same script that settles its charge.

Keys of no organization (a sign-in window, the Celery broker's) need no tag: each is touched
alone."""

from __future__ import annotations

from functools import cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

SLOT_GROUPS = 16
_SPAN = REDIS_CLUSTER_HASH_SLOTS // SLOT_GROUPS


@cache
def group_tag(group: int) -> str:
    """The hash tag of a slot group: the first `o<group>`, `o<group>.1`, ... whose slot falls in
    the group's own range of slots."""
    low = group * _SPAN
    candidates = (f"o{group}" if n == 0 else f"o{group}.{n}" for n in range(10_000))
    for candidate in candidates:
        if low <= key_slot(candidate.encode()) < low + _SPAN:
            return "{" + candidate + "}"
    raise AssertionError(f"no tag found for slot group {group}")  # pragma: no cover


def org_group(org_id: int) -> int:
    return org_id % SLOT_GROUPS


def org_tag(org_id: int) -> str:
    """The hash tag every key of the organization carries."""
    return group_tag(org_group(org_id))


def org_key(org_id: int, area: str, *parts: object) -> str:
    """`momor:<area>:<tag>:<org id>[:<part>...]`: a key of the organization, in its slot."""
    rest = "".join(f":{part}" for part in parts)
    return f"momor:{area}:{org_tag(org_id)}:{org_id}{rest}"


def org_prefix(org_id: int, area: str) -> str:
    """The start every `org_key(org_id, area, ...)` shares, for scripts that build keys of the
    same organization from an argument."""
    return f"momor:{area}:{org_tag(org_id)}:{org_id}:"


def records_stream(group: int) -> str:
    """The records stream of a slot group: the settle script of an organization of the group
    appends there, in the slot of the organization's keys."""
    return f"momor:records:{group_tag(group)}"


def records_streams() -> list[str]:
    """Every records stream, which the consumers read."""
    return [records_stream(group) for group in range(SLOT_GROUPS)]
