"""Momor under Daphne: the request-body bounds and the graceful shutdown it has under uvicorn.

Bodies. Daphne (Twisted) reads a request's whole body into memory or a temporary file before the
application sees any of it, and answers `Expect: 100-continue` itself, so the ASGI guard
(`gateway.edge.body_limit`) alone would let a 40 MiB `Content-Length` be read in full and a chunked
body that never ends be read forever. Daphne builds its requests from the class
`daphne.http_protocol.WebRequest`, looked up when each connection opens; `install` puts a
subclass there that applies the guard's limits while Twisted reads:

- a declared length past the route's limit is refused with 413 before any of the body is read,
  and no `100 Continue` is sent;
- a body that grows past the limit is refused with 413 as soon as it does;
- a body still arriving after the guard's time-out is refused with 408;

each refusal carries a request id, as every answer does under uvicorn, and closes the
connection.

Shutdown. Daphne speaks no ASGI lifespan and, on SIGTERM, cancels every call under way at
once, while Twisted still takes new connections until the reactor stops. `install` puts a
shutdown in its place that does what uvicorn and the lifespan do: the listening sockets close
at once (a load balancer sends new calls elsewhere), a request that still arrives on a kept-alive
connection is answered 503 with `connection: close`, and the requests under way get
`MOMOR_SHUTDOWN_GRACE_SECONDS` to finish, their connections closed after them (those still
running then are cancelled, each recorded as cancelled); then the hand-offs finish, the journal
is given one chance to be applied and the upstream pool is closed; Daphne then ends what is
left (the live feed's websockets). And the journal's replay starts with the process, as the
lifespan's startup does.

`momor.asgi` calls `install` only when Daphne is the server."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from daphne import http_protocol, server
from django.conf import settings
from twisted.internet import defer, reactor
from twisted.internet.interfaces import IDelayedCall

from alerts import loop as alerts_loop
from billing.recording import hand_off as recording
from gateway.edge.body_limit import BodyLimit, request_timeout
from gateway.edge.lifespan import DRAIN_SECONDS
from gateway.request.errors import GatewayError, request_too_large, service_unavailable
from gateway.upstream import pool

log = logging.getLogger(__name__)

REASONS = {
    408: b"Request Timeout",
    413: b"Content Too Large",
    415: b"Unsupported Media Type",
    503: b"Service Unavailable",
}


class BoundedWebRequest(http_protocol.WebRequest):  # type: ignore[misc]  # Daphne is untyped: its class is Any
    """Daphne's request, refusing a body past its route's limit while it is read."""

    guard: BodyLimit
    draining = False
    """Set once the server shuts down: a request that still arrives is refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused = False
        self.received = 0
        self.limit = 0
        self.deadline: IDelayedCall | None = None

    def gotLength(self, length: int | None) -> None:
        if self.draining:
            self.requestHeaders.removeHeader(b"expect")
            self.refuse(service_unavailable("Momor is shutting down: send the call again."))
            return
        self.limit = self.guard.limit_for(self._path())
        if length is not None and length > self.limit:
            self.requestHeaders.removeHeader(b"expect")  # no 100 Continue for a refused body
            self.refuse(self._too_large())
            return
        super().gotLength(length)
        self.deadline = reactor.callLater(self.guard.timeout, self._too_slow)

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        if self.received > self.limit:
            self.refuse(self._too_large())
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        self._stop_clock()
        if not self.refused:
            super().requestReceived(command, path, version)

    def connectionLost(self, reason: object) -> None:
        self._stop_clock()
        if not self.refused:
            super().connectionLost(reason)

    def refuse(self, error: GatewayError) -> None:
        """Answer `error` on the raw connection and close it; the body is read no further."""
        self.refused = True
        self._stop_clock()
        body = error.json()
        head = b"HTTP/1.1 %d %s\r\n" % (error.status, REASONS.get(error.status, b"Error"))
        head += b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body)
        head += b"x-momor-request-id: %s\r\n" % uuid.uuid4().hex.encode()
        head += b"connection: close\r\n\r\n"
        transport = self.channel.transport
        transport.pauseProducing()  # read no more of it
        transport.write(head + body)
        transport.loseConnection()

    def _too_large(self) -> GatewayError:
        content_type = (self.requestHeaders.getRawHeaders(b"content-type") or [b""])[0]
        scope = {"path": self._path(), "headers": [(b"content-type", content_type)]}
        return self.guard.too_large(scope, self.limit) if self.limit else request_too_large(0)

    def _too_slow(self) -> None:
        self.deadline = None
        if not self.refused:
            self.refuse(request_timeout(self.guard.timeout))

    def _stop_clock(self) -> None:
        if self.deadline is not None and self.deadline.active():
            self.deadline.cancel()
        self.deadline = None

    def _path(self) -> str:
        raw: bytes = self.channel._path  # the request line's target, before requestReceived
        return raw.split(b"?", 1)[0].decode("latin-1")


_kill_all_applications = server.Server.kill_all_applications


def _graceful_shutdown(self: server.Server) -> defer.Deferred[None]:
    """Daphne's shutdown step (a Twisted "before shutdown" trigger), after Momor's drain."""
    return defer.Deferred.fromFuture(asyncio.ensure_future(_shut_down(self)))


async def _shut_down(daphne: server.Server) -> None:
    grace = settings.MOMOR_SHUTDOWN_GRACE_SECONDS
    log.info("shutting down: calls under way have %ss", grace)
    BoundedWebRequest.draining = True
    try:
        for port in getattr(daphne, "momor_ports", ()):
            port.stopListening()
        await _requests_ended(daphne, grace)
        if cancelled := recording.cancel_in_flight():
            log.warning("shutdown grace period over: %d calls cancelled", cancelled)
            await _requests_ended(daphne, DRAIN_SECONDS)  # each records itself as cancelled
        await recording.shutdown(DRAIN_SECONDS)
    finally:
        # Daphne's own cancellation comes next; the pool is closed whatever came before.
        await pool.close()
    await defer.Deferred.asFuture(_kill_all_applications(daphne), asyncio.get_running_loop())


async def _requests_ended(daphne: server.Server, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (recording.running_calls() or _running_requests(daphne)) and loop.time() < deadline:
        await asyncio.sleep(0.05)


def _running_requests(daphne: server.Server) -> int:
    """HTTP requests whose application has not finished (websockets are Daphne's to end); each
    one's connection closes after its answer."""
    running = 0
    for protocol, details in list(daphne.connections.items()):
        application = details.get("application_instance")
        if isinstance(protocol, BoundedWebRequest) and application and not application.done():
            protocol.channel.persistent = False
            running += 1
    return running


_listen_success = server.Server.listen_success


def _listening(self: server.Server, port: Any) -> None:
    """Daphne's record of a listening socket, kept whole so that shutdown can close it."""
    self.momor_ports = [*getattr(self, "momor_ports", ()), port]
    _listen_success(self, port)


def install(guard: BodyLimit) -> None:
    """Bound every request Daphne reads from now on by `guard`, drain on shutdown as under
    uvicorn, and start the journal's replay."""
    BoundedWebRequest.guard = guard
    http_protocol.WebRequest = BoundedWebRequest
    server.Server.kill_all_applications = _graceful_shutdown
    server.Server.listen_success = _listening
    recording.start()
    alerts_loop.start_in_gateway()
