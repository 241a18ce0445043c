"""Error replies that mean a Redis cannot take writes at all: out of memory under `noeviction`
(OOM), a read-only replica (READONLY), a failed snapshot with `stop-writes-on-bgsave-error`
(MISCONF), too few replicas for `min-replicas-to-write` (NOREPLICAS). Redis answers, but no
record, charge or counter can be written: for Momor that Redis is down, and its fallbacks
(local admission, the journal, storing straight into the database) take over.

And UNBLOCKED, which ends a blocking read when its Redis turns into a replica (a failover): the
read is tried again on a new connection, as after a lost one."""

from __future__ import annotations

from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError, ResponseError

PREFIXES = ("OOM", "READONLY", "MISCONF", "NOREPLICAS")


class WritesRefused(ResponseError):
    """An error reply of `PREFIXES`: Redis refused a write it will refuse until an operator acts."""


class Unblocked(RedisConnectionError):
    """A blocking read ended by its Redis (UNBLOCKED): it becomes a replica, or was told to."""


REFUSALS = (WritesRefused, OutOfMemoryError, ReadOnlyError)
"""What redis-py (and Momor's own pipeline) raise for those replies."""


def refusal_of(reply: ResponseError) -> ResponseError:
    """The reply as `WritesRefused` when it is one, else as it is."""
    return WritesRefused(str(reply)) if str(reply).startswith(PREFIXES) else reply


def _teach_redis_py() -> None:
    """redis-py maps OOM and READONLY to their own classes and the rest to a bare ResponseError:
    MISCONF and NOREPLICAS become WritesRefused (a ResponseError still, so redis-py neither
    retries nor drops the connection for them), UNBLOCKED becomes Unblocked (a lost
    connection: redis-py connects again)."""
    for prefix in ("MISCONF", "NOREPLICAS"):
        BaseParser.EXCEPTION_CLASSES.setdefault(prefix, WritesRefused)
    BaseParser.EXCEPTION_CLASSES.setdefault("UNBLOCKED", Unblocked)


_teach_redis_py()
