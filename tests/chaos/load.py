"""The chaos suite's load: calls of a few kinds (`tests/chaos/apis.py`: Chat Completions alone,
or a mix of the four APIs), plain and streamed, from a few concurrent clients, spread over
the gateways still in the pool, with a fault started (on a thread) part-way; what each call
got back is kept to check the books against."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from tests.chaos.apis import CHAT_ONLY, Api, Kind

FIRST_DATA = re.compile(rb"^data: (.*)$", re.MULTILINE)


@dataclass(eq=False)
class Outcome:
    gateway: str
    kind: Kind
    request_id: str | None = None
    status: int | None = None
    started: bool = False
    """The response's head arrived."""
    shown: bool = False
    """Content reached the client (a stream's event with some, or a plain answer)."""
    complete: bool = False
    """The whole answer arrived: a body that parses, or a stream whose last event ends it
    (whole, or on its one error)."""
    answer_id: str | None = None
    """The id the answer carries (a plain body's, a stream's first event's)."""

    @property
    def api(self) -> str:
        return self.kind.api.name

    @property
    def streamed(self) -> bool:
        return self.kind.streamed


@dataclass
class Pool:
    """The gateways calls go to; a fault takes one out before stopping it. Each kind of call goes
    round them on a turn of its own: with one turn for all, clients that alternate kinds could
    settle into sending every stream to the same gateway (a plain call and the stream after it
    taking two turns in a row, whenever plain calls end before another client's stream does)."""

    urls: list[str]
    under_way: set[Outcome] = field(default_factory=set)
    """The calls sent and not yet over, filled in as their answers arrive."""
    _turns: defaultdict[Kind, itertools.count[int]] = field(
        default_factory=lambda: defaultdict(itertools.count)
    )

    def pick(self, kind: Kind) -> str:
        urls = self.urls
        return urls[next(self._turns[kind]) % len(urls)]


async def call(client: httpx.AsyncClient, outcome: Outcome, key: str) -> None:
    """Sends the call `outcome` names and fills it in with what comes back."""
    kind = outcome.kind
    api = kind.api
    try:
        async with client.stream(
            "POST", outcome.gateway + api.path, json=kind.body(), headers=api.headers(key)
        ) as response:
            outcome.started, outcome.status = True, response.status_code
            outcome.request_id = response.headers.get("x-momor-request-id")
            data = b""
            async for part in response.aiter_bytes():
                data += part
                outcome.shown = outcome.shown or api.shown.search(part) is not None
    except httpx.HTTPError:
        return
    stream = kind.streamed and response.status_code == 200
    first = _first_event(data) if stream else _parsed(data)
    outcome.complete = first is not None and (not stream or _ended(data, api))
    outcome.answer_id = api.id_of(first) if isinstance(first, dict) else None


def _parsed(data: bytes) -> Any:
    """A whole JSON body, else None."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _first_event(data: bytes) -> Any:
    found = FIRST_DATA.search(data)
    return None if found is None else _parsed(found.group(1))


def _ended(data: bytes, api: Api) -> bool:
    last = data.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    return data.endswith(b"\n\n") and api.ended.match(last) is not None


async def run_load(
    pool: Pool,
    key: str,
    fault: Callable[[], None],
    *,
    kinds: Sequence[Kind] = CHAT_ONLY,
    before: int = 120,
    after: int = 120,
    concurrency: int = 8,
) -> list[Outcome]:
    """`before` calls, then the fault (on a thread) while calls go on, then `after` more once
    it is over; the calls of each kind in turn."""
    outcomes: list[Outcome] = []
    fault_done = asyncio.Event()
    since_fault = 0

    async def client_loop(client: httpx.AsyncClient, start: int) -> None:
        """Each kind in turn, from the client's own first; a turn shared by every client
        would keep step with the pool's and send each kind to the same gateway."""
        nonlocal since_fault
        turn = itertools.islice(itertools.cycle(kinds), start, None)
        while len(outcomes) < before or not fault_done.is_set() or since_fault < after:
            kind = next(turn)
            outcome = Outcome(pool.pick(kind), kind)
            pool.under_way.add(outcome)
            try:
                await call(client, outcome, key)
            finally:
                pool.under_way.discard(outcome)
            outcomes.append(outcome)
            since_fault += fault_done.is_set()

    async def faulted() -> None:
        while len(outcomes) < before:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(fault)
        fault_done.set()

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(
            faulted(), *(client_loop(client, start) for start in range(concurrency))
        )
    return outcomes
