"""One connection to one Redis for an event loop, every command pipelined on it: the commands
given together go out in one write, packed by hiredis, and their replies, parsed by hiredis
as they arrive, answer the waiting futures in the order the commands were sent.

redis-py's asyncio client takes a connection from its pool for each pipeline and runs a
stack of Python per command and per reply (its retry, its parser, its pipeline's bookkeeping):
about 50 µs of CPU a round trip, against about 12 µs here. Redis runs a connection's commands
in order, so one connection carries every call of the loop; nothing waits for a connection.

Failures are redis-py's exceptions, so callers handle one kind: a connection refused or lost
fails every command waiting on it with `ConnectionError` (`ConnectFailed` when none of them
reached Redis; the next command connects again); an
error reply is a `ResponseError` (`NoScriptError` for NOSCRIPT, `WritesRefused` for a Redis
that takes no writes: `core.redis_refusals`) in that command's place. How
long to wait is the caller's to bound; a caller that gives up calls `reset`, so a Redis that
stopped answering is not waited on again over the same connection."""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
from redis.connection import parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from core.redis_refusals import refusal_of

Command = Sequence[str | bytes | int | float]


class ConnectFailed(RedisConnectionError):
    """Redis was never reached: none of the commands waiting for the connection ran."""


@dataclass(frozen=True, slots=True)
class Address:
    """Where one Redis listens, and what a new connection says first."""

    host: str = "127.0.0.1"
    port: int = 6379
    path: str = ""  # a Unix socket, instead of host and port
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    tls_verify: bool = True  # rediss://...?ssl_cert_reqs=none turns it off
    tls_ca: str | None = None  # ...&ssl_ca_certs=/path/to/ca.pem

    @classmethod
    def of_url(cls, url: str) -> Address:
        """The address a `redis://`, `rediss://` (TLS) or `unix://` URL names."""
        found = parse_url(url)  # type: ignore[no-untyped-call]  # redis-py's is unannotated
        return cls(
            host=found.get("host") or "127.0.0.1",
            port=int(found.get("port") or 6379),
            path=found.get("path") or "",
            db=int(found.get("db") or 0),
            username=found.get("username"),
            password=found.get("password"),
            tls=url.lower().startswith("rediss://"),
            tls_verify=str(found.get("ssl_cert_reqs", "required")).lower() != "none",
            tls_ca=found.get("ssl_ca_certs"),
        )

    def tls_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.tls_ca)
        if not self.tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def greeting(self) -> list[Command]:
        commands: list[Command] = []
        if self.password is not None:
            auth = [self.username, self.password] if self.username else [self.password]
            commands.append(["AUTH", *auth])
        if self.db:
            commands.append(["SELECT", self.db])
        return commands


class _Batch:
    """The commands sent together: their replies so far, and the future that gets them all."""

    __slots__ = ("future", "replies", "size")

    def __init__(self, future: asyncio.Future[list[Any]], size: int) -> None:
        self.future, self.size = future, size
        self.replies: list[Any] = []


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=ResponseError)
        self.waiting: deque[_Batch] = deque()
        self.transport: asyncio.Transport  # set once connected, before any command is sent
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        waiting = self.waiting
        while (reply := self.reader.gets()) is not False:
            batch = waiting[0]
            batch.replies.append(_reply(reply))
            if len(batch.replies) == batch.size:
                waiting.popleft()
                if not batch.future.done():  # else its caller gave up waiting
                    batch.future.set_result(batch.replies)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        failure = RedisConnectionError(f"the connection to Redis was lost ({exc or 'closed'})")
        while self.waiting:
            future = self.waiting.popleft().future
            if not future.done():
                future.set_exception(failure)

    def send(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]]:
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Batch(future, len(commands)))
        self.transport.write(b"".join([hiredis.pack_command(tuple(c)) for c in commands]))  # type: ignore[arg-type]  # hiredis's stub says a 1-tuple
        return future


def _reply(reply: Any) -> Any:
    if not isinstance(reply, ResponseError):
        return reply
    if str(reply).startswith("NOSCRIPT"):
        return NoScriptError(str(reply))
    return refusal_of(reply)


class PipelinedRedis:
    """The connection of one event loop to the Redis at `address`, opened on first use."""

    def __init__(self, address: Address, connect_timeout: float) -> None:
        self.address, self.connect_timeout = address, connect_timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Future[_Protocol] | None = None

    async def execute_many(self, commands: Sequence[Command]) -> list[Any]:
        """Each command's reply, in order; an error reply in its command's place."""
        protocol = self._protocol
        if protocol is None or protocol.lost:
            protocol = await self._connected()
        return await protocol.send(commands)

    def send_now(self, commands: Sequence[Command]) -> asyncio.Future[list[Any]] | None:
        """The commands written now, with no task or wait of their own: a future of their
        replies, or None while the connection is not open."""
        protocol = self._protocol
        if protocol is None or protocol.lost:
            return None
        return protocol.send(commands)

    async def execute(self, *command: str | bytes | int | float) -> Any:
        (reply,) = await self.execute_many([command])
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def reset(self) -> None:
        """Close the connection: what waits on it fails, and the next command connects."""
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            protocol.transport.abort()

    async def _connected(self) -> _Protocol:
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._connect())
        connecting = self._connecting
        try:
            return await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None

    async def _connect(self) -> _Protocol:
        loop, address = asyncio.get_running_loop(), self.address
        try:
            async with asyncio.timeout(self.connect_timeout):
                if address.path:
                    _, protocol = await loop.create_unix_connection(_Protocol, address.path)
                else:
                    _, protocol = await loop.create_connection(
                        _Protocol, address.host, address.port, ssl=address.tls_context()
                    )
                await _greet(protocol, address.greeting())
        except (OSError, TimeoutError) as exc:
            raise ConnectFailed(f"cannot connect to Redis ({exc or 'time-out'})") from None
        self._protocol = protocol
        return protocol


async def _greet(protocol: _Protocol, greeting: list[Command]) -> None:
    if not greeting:
        return
    for reply in await protocol.send(greeting):
        if isinstance(reply, ResponseError):
            protocol.transport.abort()
            raise ConnectFailed(f"Redis refused the connection: {reply}")
