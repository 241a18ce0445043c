"""The test's Redis, whether REDIS_URL names one Redis or a cluster (`bash scripts/test.sh`
runs the admission and cluster tests on both)."""

from __future__ import annotations

from typing import Any

from redis.cluster import RedisCluster

from billing.admission import select
from billing.admission.redis_store import RedisStore
from core.redis_client import SyncClient, sync_client


def client(url: str, **options: Any) -> SyncClient:
    return sync_client(url, **options)


def shared_client() -> SyncClient:
    """A client of the Redis the shared admission store in use talks to."""
    shared = select.store()
    assert isinstance(shared, RedisStore), shared
    return sync_client(shared.url)


def flush(url: str) -> None:
    """Empty the Redis (every primary of a cluster), its scripts too when asked."""
    redis = sync_client(url)
    if isinstance(redis, RedisCluster):
        redis.flushdb(target_nodes=RedisCluster.PRIMARIES)
    else:
        redis.flushdb()


def flush_scripts(url: str) -> None:
    sync_client(url).script_flush()  # on a cluster, every primary
