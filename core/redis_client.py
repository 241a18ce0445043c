"""Redis clients from a URL that names either one Redis or a Redis Cluster.

`redis://host:port/db` (or `rediss://`, `unix://`) is one Redis. `redis+cluster://host:port`
(or `rediss+cluster://`, with TLS) is a Redis Cluster: the client learns the cluster's shards
from that node, and follows them as slots move. More seed nodes may follow the first, comma
separated (`redis+cluster://10.0.0.1:6379,10.0.0.2:6379`), so that the client starts while
one of them is down; a password goes before the first (`redis+cluster://:secret@host:port`).
A cluster has one database, so the URL names none."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import ClusterNode, RedisCluster

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}

SyncClient = redis.Redis | RedisCluster
AsyncClient = aioredis.Redis | AsyncRedisCluster


def is_cluster(url: str | None) -> bool:
    if not url:
        return False
    return url.split("://", 1)[0].lower() in CLUSTER_SCHEMES


def cluster_nodes(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The seed nodes a cluster URL names, and its connection options (TLS, credentials)."""
    scheme, rest = url.split("://", 1)
    credentials, _, hosts = rest.rpartition("@")
    hosts = hosts.split("/", 1)[0].split("?", 1)[0]
    nodes = []
    for seed in hosts.split(","):
        parsed = urlsplit(f"redis://{seed}")
        if not parsed.hostname:
            raise ValueError("a cluster URL names host:port seed nodes")
        nodes.append((parsed.hostname, parsed.port or 6379))
    options: dict[str, Any] = {"ssl": CLUSTER_SCHEMES[scheme.lower()]}
    if credentials:
        username, _, password = credentials.partition(":")
        options["username"] = unquote(username) or None
        options["password"] = unquote(password) or None
    return nodes, options


def sync_client(url: str, **options: Any) -> SyncClient:
    """A blocking client of the Redis or cluster the URL names."""
    if not is_cluster(url):
        return redis.Redis.from_url(url, **options)
    nodes, connection = cluster_nodes(url)
    seeds = [ClusterNode(host, port) for host, port in nodes]  # type: ignore[no-untyped-call]  # redis-py's is unannotated
    return RedisCluster(startup_nodes=seeds, **connection, **options)


def async_client(url: str, *, pool_size: int, timeout: float) -> AsyncClient:
    """An asyncio client of the Redis or cluster the URL names, every call bounded by
    `timeout`; on one Redis, calls past `pool_size` at once wait for a connection."""
    if is_cluster(url):
        return async_cluster_client(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=pool_size, timeout=timeout, socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )  # fmt: skip
    return aioredis.Redis(connection_pool=pool)


def async_cluster_client(url: str, **options: Any) -> AsyncRedisCluster:
    """An asyncio client of the cluster the URL names."""
    nodes, connection = cluster_nodes(url)
    seeds = [AsyncClusterNode(host, port) for host, port in nodes]
    return AsyncRedisCluster(startup_nodes=seeds, **connection, **options)
