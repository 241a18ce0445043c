"""A lean HTTP/1.1 load generator on raw asyncio streams: one keep-alive connection per
concurrent worker, closed loop (a worker sends its next call when the last one ends), every
call timed from the first byte written to the last byte read. Loopback only."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson

# The first SSE event that shows text, a non-empty string: `"content":"x` in a Chat
# Completions chunk, `"text":"x` in a Messages `content_block_delta`, `"delta":"x` in a
# Responses `response.output_text.delta` (on its data line, after its type).
CONTENT = re.compile(rb'"content":\s*"[^"]')
MESSAGES_TEXT = re.compile(rb'"text":\s*"[^"]')
RESPONSES_TEXT = re.compile(rb'"type":\s*"response\.output_text\.delta"[^\n]*"delta":\s*"[^"]')
TEXT_MARKS = {"messages": MESSAGES_TEXT, "responses": RESPONSES_TEXT}  # by API; else CONTENT
TIMEOUT = 30.0
SAMPLE_BODIES = 3

Watch = re.Pattern[bytes] | None
"""What a streamed call's text events hold (`Target.text_mark`); None: a plain call."""


PROMPT = "Say hello in twenty pieces."
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True)
class Target:
    """An OpenAI-compatible endpoint: POST `{base}/chat/completions` with `key` and `model`
    (`api` "embeddings": POST `{base}/embeddings`, the prompt as the one input; `api`
    "messages": POST `{base}/messages` as Anthropic's SDK sends it, the key in `x-api-key`;
    `api` "responses": POST `{base}/responses`, the prompt as the input)."""

    name: str
    base_url: str
    key: str
    model: str
    # More processes of the same gateway on the same host (same path): connections are spread
    # round-robin over base_url's port and these.
    more_ports: tuple[int, ...] = ()
    api: str = "chat"
    # Sent with every call after the key, in this order: how a gateway that routes by headers
    # is told where the call goes.
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.base_url)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"{self.name}: the benchmark sends traffic only to loopback")
        return parts.hostname, parts.port or 80

    @property
    def addresses(self) -> list[tuple[str, int]]:
        host, port = self.host_port
        return [(host, port), *((host, more) for more in self.more_ports)]

    @property
    def streams(self) -> bool:
        """Whether this API's calls can be streamed (an embeddings call cannot)."""
        return self.api != "embeddings"

    @property
    def text_mark(self) -> re.Pattern[bytes]:
        """What a streamed event showing text holds, in this API's stream."""
        return TEXT_MARKS.get(self.api, CONTENT)

    def request(self, *, stream: bool) -> bytes:
        """The raw bytes of one call, built once and resent as is."""
        body: dict[str, object] = {
            "model": self.model,
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 64,
        }
        route, auth = "/chat/completions", f"Authorization: Bearer {self.key}"
        if self.api == "embeddings":
            body, route = {"model": self.model, "input": PROMPT}, "/embeddings"
        elif self.api == "messages":
            route = "/messages"
            auth = f"x-api-key: {self.key}\r\nanthropic-version: {ANTHROPIC_VERSION}"
        elif self.api == "responses":
            body = {"model": self.model, "input": PROMPT, "max_output_tokens": 64}
            route = "/responses"
        if stream:
            body["stream"] = True
        payload = orjson.dumps(body)
        path = urlsplit(self.base_url).path.rstrip("/") + route
        host, port = self.host_port
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"{auth}\r\n{extra}Content-Type: application/json\r\n"
            f"Accept: {'text/event-stream' if stream else 'application/json'}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload


@dataclass
class Result:
    """One call: its status, total time, and for streams the time to the first text chunk
    and the count of text chunks seen (seconds)."""

    status: int
    total: float
    first: float | None = None
    chunks: int = 0
    body: bytes = b""
    where: int = 0  # which of the target's addresses answered


class Closed(Exception):
    """The server closed the connection."""


class Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, raw: bytes, *, watch: Watch) -> Result:
        reused = self.writer is not None
        try:
            return await self._call(raw, watch)
        except Closed:
            if not reused:
                raise
        await self.close()  # a kept-alive connection the server had closed: once more
        return await self._call(raw, watch)

    async def _call(self, raw: bytes, watch: Watch) -> Result:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        if self.reader is None or self.writer is None:
            raise Closed()
        start = time.perf_counter()
        self.writer.write(raw)
        status, length, chunked, keep = await _head(self.reader)
        result = Result(status, 0.0)
        if chunked:
            await _read_chunked(self.reader, result, start, watch)
        elif length is not None:
            result.body = await self.reader.readexactly(length)
            _saw(result, result.body, start, watch)
        else:
            result.body = await self.reader.read()
            keep = False
            _saw(result, result.body, start, watch)
        result.total = time.perf_counter() - start
        if not keep:
            await self.close()
        return result

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = self.reader = None


async def _head(reader: asyncio.StreamReader) -> tuple[int, int | None, bool, bool]:
    try:
        block = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
        raise Closed() from exc
    lines = block.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, chunked, keep = None, False, True
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value
        elif name == b"connection":
            keep = value != b"close"
    return status, length, chunked, keep


async def _read_chunked(
    reader: asyncio.StreamReader, result: Result, start: float, watch: Watch
) -> None:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            break
        data = (await reader.readexactly(size + 2))[:-2]
        _saw(result, data, start, watch)
        parts.append(data)
    result.body = b"".join(parts)


def _saw(result: Result, data: bytes, start: float, watch: Watch) -> None:
    if watch is None:
        return
    found = len(watch.findall(data))
    if found and result.first is None:
        result.first = time.perf_counter() - start
    result.chunks += found


@dataclass
class PhaseRun:
    """Every call of one phase, with the errors by status (0: connection or time-out)."""

    concurrency: int
    elapsed: float = 0.0
    results: list[Result] = field(default_factory=list)
    errors: Counter[int] = field(default_factory=Counter)
    samples: dict[int, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> list[Result]:
        return [r for r in self.results if r.status == 200]

    def add(self, result: Result) -> None:
        self.results.append(result)
        if result.status != 200:
            self.errors[result.status] += 1
            shown = self.samples.setdefault(result.status, [])
            if len(shown) < SAMPLE_BODIES:
                shown.append(result.body[:500].decode(errors="replace"))


async def run_phase(
    target: Target, *, concurrency: int, count: int, seconds: float, stream: bool = False
) -> PhaseRun:
    """`concurrency` workers send calls until `count` calls are sent or `seconds` pass; worker
    i keeps its connection to the target's address i modulo their number (round-robin)."""
    raw = target.request(stream=stream)
    watch = target.text_mark if stream else None
    addresses = target.addresses
    run = PhaseRun(concurrency)
    left = [count]
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    await asyncio.gather(
        *(
            _worker(addresses, i % len(addresses), raw, watch, run, left, deadline)
            for i in range(concurrency)
        )
    )
    run.elapsed = time.perf_counter() - start
    return run


async def _worker(
    addresses: list[tuple[str, int]], where: int, raw: bytes, watch: Watch, run: PhaseRun,
    left: list[int], deadline: float,
) -> None:  # fmt: skip
    conn = Connection(*addresses[where])
    try:
        while left[0] > 0 and time.perf_counter() < deadline:
            left[0] -= 1
            result = await _one(conn, raw, watch)
            result.where = where
            run.add(result)
    finally:
        await conn.close()


async def _one(conn: Connection, raw: bytes, watch: Watch) -> Result:
    start = time.perf_counter()
    try:
        return await asyncio.wait_for(conn.call(raw, watch=watch), TIMEOUT)
    except (OSError, Closed, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
        await conn.close()
        body = f"{type(exc).__name__}: {exc}".encode()
        return Result(0, time.perf_counter() - start, body=body)
