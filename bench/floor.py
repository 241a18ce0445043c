"""The floor for one Python hop: a bare aiohttp pass-through proxy on uvloop that forwards the
call's bytes to the fake upstream and relays the answer as it comes (no key, routing, limits,
translation or records). `--floor` measures it beside the gateways.

    python -m bench.floor --port PORT --upstream http://127.0.0.1:FAKE/v1"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator

import aiohttp
import uvloop
from aiohttp import web

FORWARDED = ("content-type", "authorization")


def app(upstream: str) -> web.Application:
    async def session_context(application: web.Application) -> AsyncIterator[None]:
        application["session"] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1000, keepalive_timeout=60)
        )
        yield
        await application["session"].close()

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {name: request.headers[name] for name in FORWARDED if name in request.headers}
        session: aiohttp.ClientSession = request.app["session"]
        async with session.post(f"{upstream}/chat/completions", data=body, headers=headers) as up:
            content_type = up.headers.get("content-type", "application/json")
            response = web.StreamResponse(status=up.status, headers={"content-type": content_type})
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    application = web.Application()
    application.cleanup_ctx.append(session_context)
    application.router.add_post("/v1/chat/completions", relay)
    return application


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.floor")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    web.run_app(
        app(args.upstream.rstrip("/")), host="127.0.0.1", port=args.port,
        access_log=None, print=None, loop=uvloop.new_event_loop(),
    )  # fmt: skip


if __name__ == "__main__":
    main()
