"""The chaos suite's load: plain and streamed calls from a few concurrent clients, spread over
the gateways still in the pool, with a fault started (on a thread) part-way; what each call
got back is kept to check the books against."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import orjson

from tests.chaos.conftest import MODEL

HI = [{"role": "user", "content": "hi"}]
CONTENT = re.compile(rb'"content":"[^"]')


@dataclass
class Outcome:
    gateway: str
    streamed: bool
    request_id: str | None = None
    status: int | None = None
    started: bool = False
    """The response's head arrived."""
    shown: bool = False
    """Content reached the client (a stream's chunk with some, or a plain answer)."""
    complete: bool = False
    """The whole answer arrived: a body that parses, or a stream that ends on `[DONE]` or on
    its one error chunk."""


@dataclass
class Pool:
    """The gateways calls go to; a fault takes one out before stopping it."""

    urls: list[str]
    _turn: itertools.count[int] = field(default_factory=itertools.count)

    def pick(self) -> str:
        urls = self.urls
        return urls[next(self._turn) % len(urls)]


async def call(client: httpx.AsyncClient, url: str, key: str, streamed: bool) -> Outcome:
    outcome = Outcome(url, streamed)
    body = {"model": MODEL, "messages": HI, "stream": streamed}
    headers = {"authorization": f"Bearer {key}"}
    try:
        async with client.stream(
            "POST", url + "/v1/chat/completions", json=body, headers=headers
        ) as response:
            outcome.started, outcome.status = True, response.status_code
            outcome.request_id = response.headers.get("x-momor-request-id")
            data = b""
            async for part in response.aiter_bytes():
                data += part
                outcome.shown = outcome.shown or CONTENT.search(part) is not None
    except httpx.HTTPError:
        return outcome
    outcome.complete = _whole(data, streamed and response.status_code == 200)
    return outcome


def _whole(data: bytes, stream: bool) -> bool:
    if not stream:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        return True
    if data.endswith(b"data: [DONE]\n\n"):
        return True
    last = data.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    return last.startswith(b"data: {") and b'"finish_reason":"error"' in last


async def run_load(
    pool: Pool,
    key: str,
    fault: Callable[[], None],
    *,
    before: int = 120,
    after: int = 120,
    concurrency: int = 8,
) -> list[Outcome]:
    """`before` calls, then the fault (on a thread) while calls go on, then `after` more once
    it is over; half of the calls streamed."""
    outcomes: list[Outcome] = []
    fault_done = asyncio.Event()
    since_fault = 0

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal since_fault
        while len(outcomes) < before or not fault_done.is_set() or since_fault < after:
            streamed = len(outcomes) % 2 == 1
            outcomes.append(await call(client, pool.pick(), key, streamed))
            since_fault += fault_done.is_set()

    async def faulted() -> None:
        while len(outcomes) < before:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(fault)
        fault_done.set()

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(faulted(), *(client_loop(client) for _ in range(concurrency)))
    return outcomes
