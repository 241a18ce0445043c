"""Where admission's script calls go: one Redis, or the shards of a Redis Cluster.

A batch of calls goes out as one pipeline. redis-py's cluster pipelines refuse EVALSHA, so on
a cluster a batch is split by the shard that serves each call's keys (every key of a call is
in one slot, `core.redis_keys`), and each shard's share goes as one plain pipeline on a
connection to that shard, every shard at once: a round trip per batch still, to each shard it
touches. A call whose slot has moved (MOVED, ASK while a cluster reshards) is sent again
through the cluster client, which follows the redirection and learns the new layout.

`ScriptCall`s carry the script's SHA1; a `NoScriptError` in a result says the shard has not
seen the script yet (the caller loads it and calls again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from core.redis_pipeline import PipelinedRedis

Call = tuple[str, list[str], list[Any]]
"""A script's SHA1, its keys, its arguments."""

REDIRECTED = ("MOVED", "ASK")


def _redirected(result: Any) -> bool:
    return isinstance(result, ResponseError) and str(result).startswith(REDIRECTED)


class AsyncTarget:
    """One Redis: a batch is one pipeline on the event loop's one connection to it."""

    def __init__(self, connection: PipelinedRedis) -> None:
        self.connection = connection

    async def evalsha_many(self, calls: list[Call]) -> list[Any]:
        return await self.connection.execute_many(
            [("EVALSHA", sha, len(keys), *keys, *args) for sha, keys, args in calls]
        )

    def send_now(self, commands: list[tuple[Any, ...]]) -> asyncio.Future[list[Any]] | None:
        """The commands written at once on the open connection, or None while it is not open
        (the caller goes through `evalsha_many`, which connects)."""
        return self.connection.send_now(commands)

    async def script_load(self, script: str) -> None:
        await self.connection.execute("SCRIPT", "LOAD", script)

    def reset(self) -> None:
        """Drop the connection after a batch that took too long (the next one connects)."""
        self.connection.reset()


class AsyncShards(AsyncTarget):
    """A Redis Cluster: a batch is one pipeline per shard it touches, sent together."""

    def __init__(
        self, cluster: AsyncRedisCluster, node_connection: Callable[[str, int], PipelinedRedis]
    ) -> None:
        self.cluster, self._node_connection = cluster, node_connection
        self._nodes: dict[str, AsyncTarget] = {}

    async def evalsha_many(self, calls: list[Call]) -> list[Any]:
        await self.cluster.initialize()  # learns the layout once; a no-op after
        shares: dict[str, list[int]] = {}
        for i, (_, keys, _args) in enumerate(calls):
            shares.setdefault(self._node_of(keys[0]), []).append(i)
        results: list[Any] = [None] * len(calls)
        replies = await asyncio.gather(
            *(self._nodes[name].evalsha_many([calls[i] for i in share])
              for name, share in shares.items())
        )  # fmt: skip
        for share, reply in zip(shares.values(), replies, strict=True):
            for i, result in zip(share, reply, strict=True):
                results[i] = result
        for i, result in enumerate(results):
            if _redirected(result):
                results[i] = await self._through_cluster(calls[i])
        return results

    def _node_of(self, key: str) -> str:
        node = self.cluster.get_node_from_key(key)
        if node is None:
            raise ResponseError(f"no cluster node holds the slot of {key}")
        if node.name not in self._nodes:
            self._nodes[node.name] = AsyncTarget(self._node_connection(node.host, int(node.port)))
        return str(node.name)

    async def _through_cluster(self, call: Call) -> Any:
        sha, keys, args = call
        try:
            return await self.cluster.evalsha(sha, len(keys), *keys, *args)
        except ResponseError as exc:
            return exc

    def send_now(self, commands: list[tuple[Any, ...]]) -> asyncio.Future[list[Any]] | None:
        return None  # a batch is split by shard first

    async def script_load(self, script: str) -> None:
        await self.cluster.script_load(script)  # on every primary

    def reset(self) -> None:
        for node in self._nodes.values():
            node.reset()


def evalsha_many_sync(client: redis.Redis | RedisCluster, calls: list[Call]) -> list[Any]:
    """The same from a thread: one pipeline, or on a cluster one per shard (in turn)."""
    if not isinstance(client, RedisCluster):
        return _pipeline_sync(client, calls)
    shares: dict[str, list[int]] = {}
    nodes: dict[str, redis.Redis] = {}
    for i, (_, keys, _args) in enumerate(calls):
        node = client.get_node_from_key(keys[0])  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
        nodes[node.name] = node.redis_connection or client.get_redis_connection(node)
        shares.setdefault(node.name, []).append(i)
    results: list[Any] = [None] * len(calls)
    for name, share in shares.items():
        for i, result in zip(share, _pipeline_sync(nodes[name], [calls[i] for i in share]),
                             strict=True):  # fmt: skip
            results[i] = result
    for i, result in enumerate(results):
        if _redirected(result):
            sha, keys, args = calls[i]
            try:
                results[i] = client.evalsha(sha, len(keys), *keys, *args)
            except ResponseError as exc:
                results[i] = exc
    return results


def _pipeline_sync(client: redis.Redis, calls: list[Call]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for sha, keys, args in calls:
        pipe.evalsha(sha, len(keys), *keys, *args)
    return list(pipe.execute(raise_on_error=False))
