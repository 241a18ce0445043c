"""The pipelined connection to one Redis, against real redis-server processes of the tests'
own: replies in order, error replies in their command's place, the database and password a
URL names, a Redis refused, killed, frozen or restarted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from core.redis_pipeline import Address, ConnectFailed, PipelinedRedis
from tests.stores import RedisServer, free_port


@pytest.fixture
def server() -> Iterator[RedisServer]:
    own = RedisServer(durable=False)
    own.start()
    yield own
    own.close()


@pytest.fixture
async def connection(server: RedisServer) -> AsyncIterator[PipelinedRedis]:
    made = PipelinedRedis(Address.of_url(server.url), connect_timeout=1.0)
    yield made
    made.reset()


async def test_commands_sent_together_answer_in_order(connection: PipelinedRedis) -> None:
    replies = await connection.execute_many(
        [("SET", "a", 1), ("INCR", "a"), ("GET", "a"), ("INCRBY", "a", "x"), ("GET", "missing")]
    )
    assert replies[:3] == [b"OK", 2, b"2"]
    assert isinstance(replies[3], ResponseError)
    assert replies[4] is None


async def test_an_unknown_script_answers_no_script_in_its_place(
    connection: PipelinedRedis,
) -> None:
    sha = await connection.execute("SCRIPT", "LOAD", "return ARGV[1]")
    unknown = "0" * 40
    replies = await connection.execute_many(
        [("EVALSHA", sha, 0, "x"), ("EVALSHA", unknown, 0), ("EVALSHA", sha, 0, "y")]
    )
    assert replies[0] == b"x"
    assert isinstance(replies[1], NoScriptError)
    assert replies[2] == b"y"


async def test_calls_of_one_turn_share_the_connection_and_each_gets_its_own_replies(
    connection: PipelinedRedis,
) -> None:
    replies = await asyncio.gather(
        *(connection.execute_many([("SET", f"k{i}", i), ("GET", f"k{i}")]) for i in range(200))
    )
    assert replies == [[b"OK", str(i).encode()] for i in range(200)]


async def test_a_caller_that_gave_up_does_not_take_the_next_callers_reply(
    server: RedisServer, connection: PipelinedRedis
) -> None:
    await connection.execute("SET", "slow", "first")
    waiting = asyncio.ensure_future(connection.execute_many([("BLPOP", "nothing", 1)]))
    await asyncio.sleep(0.1)
    waiting.cancel()
    assert await connection.execute("GET", "slow") == b"first"


async def test_the_url_names_the_database(server: RedisServer) -> None:
    other = PipelinedRedis(Address.of_url(f"redis://127.0.0.1:{server.port}/3"), 1.0)
    await other.execute("SET", "where", "db3")
    direct = redis.Redis(port=server.port, db=3)
    assert direct.get("where") == b"db3"
    assert redis.Redis(port=server.port, db=0).get("where") is None
    other.reset()


async def test_a_password_is_sent_before_any_command(server: RedisServer) -> None:
    redis.Redis(port=server.port).config_set("requirepass", "s3cret")
    wrong = PipelinedRedis(Address.of_url(f"redis://:nope@127.0.0.1:{server.port}/0"), 1.0)
    with pytest.raises(ConnectFailed):
        await wrong.execute("PING")
    right = PipelinedRedis(Address.of_url(f"redis://:s3cret@127.0.0.1:{server.port}/0"), 1.0)
    assert await right.execute("PING") == b"PONG"
    right.reset()


async def test_a_redis_that_refuses_connections_fails_before_any_command_ran() -> None:
    closed = PipelinedRedis(Address(port=free_port()), connect_timeout=1.0)
    with pytest.raises(ConnectFailed):
        await closed.execute_many([("INCR", "n")])


async def test_a_killed_redis_fails_what_waits_and_a_restarted_one_is_reconnected(
    server: RedisServer, connection: PipelinedRedis
) -> None:
    await connection.execute("SET", "n", 1)
    waiting = asyncio.ensure_future(connection.execute_many([("BLPOP", "nothing", 5)]))
    await asyncio.sleep(0.1)
    server.kill()
    with pytest.raises(RedisConnectionError):
        await waiting
    with pytest.raises(ConnectFailed):
        await connection.execute("GET", "n")
    server.start()
    assert await connection.execute("PING") == b"PONG"


async def test_a_frozen_redis_is_left_once_the_caller_resets(
    server: RedisServer, connection: PipelinedRedis
) -> None:
    await connection.execute("PING")
    server.freeze()
    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await connection.execute("PING")
        connection.reset()
        server.thaw()
        assert await connection.execute("PING") == b"PONG"
    finally:
        server.thaw()


def test_a_tls_url_asks_for_tls_and_its_verification_options() -> None:
    plain = Address.of_url("redis://cache:6380/2")
    assert (plain.host, plain.port, plain.db, plain.tls) == ("cache", 6380, 2, False)
    secure = Address.of_url("rediss://user:pw@cache:6380/1?ssl_cert_reqs=none")
    assert (secure.username, secure.password, secure.tls, secure.tls_verify) == (
        "user",
        "pw",
        True,
        False,
    )
    assert secure.tls_context() is not None
    assert plain.tls_context() is None
