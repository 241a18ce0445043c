"""A client that goes away while a streamed call's session moves (the step after the stream's
first chunk, before its answer begins) has the call handed to billing once. The handler's
cancel handed the record off, and the stream, closed when its answer was dropped, handed it
off again: two records of one call, the first without the stream's usage, its settled charge
held as unposted with no ledger entry ever to clear it."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis

from core.redis_keys import records_stream
from tests.billing.conftest import HI, child_env
from tests.gateway.conftest import World
from tests.processes import Gateway
from tests.stores import RedisServer, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

GROUPS = 16


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    server = RedisServer(durable=False)
    server.start()
    yield server
    server.close()


def _held(client: redis.Redis, *commands: str) -> bool:
    """One of the gateway's writes (by command name) is held by the pause."""
    return any(c["cmd"] in commands and "b" in c["flags"] for c in client.client_list())


def _records_handed_off(client: redis.Redis) -> list[tuple[str, str]]:
    """The request id and status of each record in the records streams."""
    records = [
        orjson.loads(fields[b"r"])
        for group in range(GROUPS)
        for _, fields in client.xrange(records_stream(group))
    ]
    return [(record["request_id"], record["status"]) for record in records]


def _streamed_call(url: str, key: str) -> socket.socket:
    body = orjson.dumps({"model": "openai/gpt-5", "messages": HI, "stream": True})
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: momor\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"X-Session-Id: sticky\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    host, port = url.removeprefix("http://").split(":")
    client = socket.create_connection((host, int(port)))
    client.sendall(head.encode() + body)
    return client


def test_a_client_gone_while_the_session_moves_is_handed_off_once(
    world: World, own_redis: RedisServer, tmp_path: Path
) -> None:
    world.fake.script("gpt-5", delay_first_byte=1.0)
    env = child_env(
        REDIS_URL=own_redis.url,
        MOMOR_RECORD_IN_GATEWAY="0",  # no consumer: every hand-off stays in the stream
        MOMOR_JOURNAL_DIR=str(tmp_path / "journal"),
    )
    gateway = Gateway(env, tmp_path / "gateway.log")
    store = own_redis.client()
    try:
        gateway.wait_ready()
        client = _streamed_call(gateway.url, world.key)
        wait_until(lambda: world.fake.requests("gpt-5"), 20, "the call at the provider")
        store.client_pause(20_000, all=False)  # writes wait: the session's among them
        wait_until(lambda: _held(store, "set"), 20, "the session step")
        client.close()
        wait_until(lambda: _held(store, "evalsha", "eval"), 20, "the cancelled call's hand-off")
        store.client_unpause()
        wait_until(lambda: _records_handed_off(store), 20, "the record in the stream")
        # its hand-offs and journal are done once it has exited
        assert gateway.terminate() in (0, -signal.SIGTERM)
    finally:
        store.client_unpause()
        gateway.close()
    [(_, status)] = _records_handed_off(store)
    assert status == "cancelled"
