"""A webhook receiver on loopback: a real HTTP server that keeps every request, answers 503
while it is `down`, and waits `slow` seconds before each answer (the `receiver` fixture, shared
by every test through the root conftest)."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = orjson.loads(self.body)
        return parsed

    def signed_by(self, secret: str, tolerance: int = 300) -> bool:
        """Checked as a receiver would, from the documented scheme alone."""
        parts = dict(p.split("=", 1) for p in self.headers["momor-signature"].split(","))
        expected = hmac.new(
            secret.encode(), parts["t"].encode() + b"." + self.body, hashlib.sha256
        ).hexdigest()
        fresh = abs(time.time() - int(parts["t"])) <= tolerance
        return fresh and hmac.compare_digest(expected, parts["v1"])


@dataclass
class Receiver:
    url: str
    taken: list[Received] = field(default_factory=list)
    refused: list[Received] = field(default_factory=list)
    arrived: list[Received] = field(default_factory=list)
    """Every request, as it arrives (before it is answered)."""
    down: bool = False
    slow: float = 0.0
    """Seconds each request waits before it is answered."""

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [r.event for r in self.taken if kind is None or r.event["type"] == kind]

    def wait_for(self, count: int, timeout: float, kind: str | None = None) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events(kind)) < count:
            assert time.monotonic() < deadline, f"{len(self.events(kind))} of {count} arrived"
            time.sleep(0.05)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            got = Received({k.lower(): v for k, v in self.headers.items()}, body)
            state.arrived.append(got)
            time.sleep(state.slow)
            if state.down:
                state.refused.append(got)
                self._answer(503, b"down for maintenance")
            else:
                state.taken.append(got)
                self._answer(200, b'{"received": true}')

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads, server.block_on_close = True, False  # a slow answer holds nothing
    state.url = f"http://127.0.0.1:{server.server_address[1]}/momor-hook?team=ops"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
