"""Momor run as docs/operations.md says, in a server process of its own (uvicorn or Daphne), on the
test database; and a bare socket to talk to it byte by byte."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def commands(port: int) -> dict[str, list[str]]:
    """docs/operations.md's run commands, on a loopback port."""
    return {
        "uvicorn": [
            sys.executable, "-m", "uvicorn", "momor.asgi:application",
            "--host", "127.0.0.1", "--port", str(port),
            "--loop", "uvloop", "--http", "httptools", "--ws-max-size", "4096",
        ],
        "daphne": [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                   "momor.asgi:application"],
    }  # fmt: skip


def database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@dataclass
class RealServer:
    kind: str
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(kind: str, **env: str) -> RealServer:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix=f"momor-{kind}-", suffix=".log")[1])
    environment = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL}
    environment.update(env)
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own argv, no shell
            commands(port)[kind], cwd=ROOT, env=environment, stdout=out, stderr=out
        )
    server = RealServer(kind, f"http://127.0.0.1:{port}", port, process, log)
    _wait_listening(server)
    return server


def _wait_listening(server: RealServer, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.kind} exited: {server.output()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{server.kind} never listened: {server.output()[-2000:]}")


@dataclass
class Exchange:
    """What a bare-socket client saw: the bytes answered, how many body bytes it got to send
    before the server answered or closed, and how long that took."""

    answer: bytes
    sent: int
    seconds: float

    @property
    def status(self) -> int:
        return int(self.answer.split(b" ", 2)[1]) if self.answer.startswith(b"HTTP/") else 0


def exchange(
    server: RealServer, head: bytes, parts: Iterable[bytes] = (), *, pause: float = 0.0
) -> Exchange:
    """Send the head, then each part (stopping as soon as the server answers or closes), and
    read everything the server says until it closes."""
    started = time.monotonic()
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        answer = b""
        for part in parts:
            answer += _available(sock)
            if answer:
                break
            try:
                sock.setblocking(True)
                sock.sendall(part)
                sent += len(part)
            except OSError:
                break
            finally:
                sock.setblocking(False)
            time.sleep(pause)
        sock.setblocking(True)
        answer += _rest(sock)
    return Exchange(answer, sent, time.monotonic() - started)


def _available(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return b""
    except OSError:
        return b""


def _rest(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    return data


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)
