"""The ASGI lifespan protocol, for servers that speak it (uvicorn): the upstream pool is
closed cleanly at shutdown."""

from __future__ import annotations

from gateway import upstream
from gateway.body_limit import Receive, Scope, Send


async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await upstream.close()
            await send({"type": "lifespan.shutdown.complete"})
            return
