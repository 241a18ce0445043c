"""The ASGI lifespan protocol, for servers that speak it (uvicorn; Daphne does not, see
docs/billing.md, "Shutdown"). At start: the journal's replay (records a process that died
left behind), the alerts loop in embedded mode, and the shutdown grace period. At shutdown
(uvicorn sends it once the calls under way have ended): the hand-offs under way finish, the
journal is given one chance to be applied, and the upstream pool is closed."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from functools import partial
from types import FrameType
from typing import Any

from django.conf import settings

from alerts import loop as alerts_loop
from billing.recording import hand_off as recording
from core.asgi_types import Receive, Scope, Send
from gateway.upstream import pool

log = logging.getLogger(__name__)

# The hand-offs left at shutdown are each bounded by a Redis time-out and an fsync; the
# journal's last replay by this.
DRAIN_SECONDS = 5.0


async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            recording.start()
            alerts_loop.start_in_gateway()
            _grace_on_signals(asyncio.get_running_loop())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            try:
                await recording.shutdown(DRAIN_SECONDS)
            finally:
                await pool.close()
            await send({"type": "lifespan.shutdown.complete"})
            return


def _grace_on_signals(loop: asyncio.AbstractEventLoop) -> None:
    """On SIGTERM (or SIGINT) uvicorn stops taking connections and waits for the calls under
    way, without a limit of its own unless given --timeout-graceful-shutdown. Momor's limit:
    MOMOR_SHUTDOWN_GRACE_SECONDS after the signal, the calls still running are cancelled
    (each recorded as cancelled, billed for what it delivered), so the process exits. The
    server's own handler still runs after this one."""
    if threading.current_thread() is not threading.main_thread():
        return  # a server in a thread (tests) has no signal handlers
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, partial(_on_signal, loop, signal.getsignal(sig)))


def _on_signal(
    loop: asyncio.AbstractEventLoop, previous: Any, signum: int, frame: FrameType | None
) -> None:
    loop.call_soon_threadsafe(_start_grace, loop)
    if callable(previous):
        previous(signum, frame)


_grace: asyncio.TimerHandle | None = None


def _start_grace(loop: asyncio.AbstractEventLoop) -> None:
    global _grace
    if _grace is None:
        log.info("shutting down: calls under way have %ss", settings.MOMOR_SHUTDOWN_GRACE_SECONDS)
        _grace = loop.call_later(settings.MOMOR_SHUTDOWN_GRACE_SECONDS, _grace_over)


def _grace_over() -> None:
    cancelled = recording.cancel_in_flight()
    if cancelled:
        log.warning("shutdown grace period over: %d calls cancelled", cancelled)
