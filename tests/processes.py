"""Momor's own processes started by a test with the environment it gives: a gateway (uvicorn
serving momor.asgi:application, lifespan on, as in production) and a Celery worker; each can
be stopped politely (SIGTERM) or killed (SIGKILL)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]


def momor_env(database_url: str, redis_url: str | None, **extra: str) -> dict[str, str]:
    """The environment of a Momor process on the given stores (no REDIS_URL: embedded mode)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOMOR_", "REDIS_URL"))}
    env.update(
        DATABASE_URL=database_url,
        MOMOR_SECRET_KEY="test-secret-key-not-for-production",
        MOMOR_ENCRYPTION_KEY="test-encryption-key",
        MOMOR_REFRESH_SECONDS="0.2",
        MOMOR_DB_CONN_MAX_AGE="0",
        DJANGO_SETTINGS_MODULE="momor.settings",
        PYTHONUNBUFFERED="1",
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env


class Process:
    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process, self.log = process, log

    @property
    def pid(self) -> int:
        return self.process.pid

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM, and the exit status once it has exited."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class Gateway(Process):
    """`momor.asgi:application` under uvicorn (docs/operations.md's server) or Daphne (the design's
    reference server), on a socket of its own."""

    def __init__(self, env: dict[str, str], log: Path, server: str = "uvicorn") -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        fd = str(sock.fileno())
        if server == "daphne":
            sock.listen()
            command = [sys.executable, "-m", "daphne", "--fd", fd, "-v", "0"]
            command.append("momor.asgi:application")
        else:
            command = [sys.executable, "-m", "uvicorn", "momor.asgi:application", "--fd", fd]
            command += ["--log-level", "warning", "--no-access-log"]
            if server == "uvicorn-uvloop":  # docs/operations.md's production command
                command += ["--loop", "uvloop", "--http", "httptools"]
            if server == "uvicorn-no-lifespan":  # as a server that speaks no lifespan
                command += ["--lifespan", "off"]
        with log.open("ab") as out:
            process = subprocess.Popen(  # noqa: S603 - our own server, argv written here
                command, cwd=ROOT, env=env, pass_fds=[sock.fileno()], stdout=out, stderr=out
            )
        sock.close()
        super().__init__(process, log)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited:\n{self.output()}")
            try:
                # an anonymous lookup is refused without touching the database
                if httpx.get(self.url + "/v1/generation?id=x", timeout=2).status_code == 401:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the gateway did not start within {timeout} s:\n{self.output()}")


class Worker(Process):
    """`celery -A momor worker`, as operators run it (the solo pool keeps it to one process)."""

    def __init__(self, env: dict[str, str], log: Path, name: str) -> None:
        self.name = name
        command = [sys.executable, "-m", "celery", "-A", "momor", "worker", "--pool", "solo"]
        command += ["-l", "warning", "-n", f"{name}@%h", "--without-gossip", "--without-mingle"]
        command += ["--without-heartbeat"]
        with log.open("ab") as out:
            process = subprocess.Popen(  # noqa: S603 - our own Celery worker, argv written here
                command, cwd=ROOT, env=env, stdout=out, stderr=out
            )
        super().__init__(process, log)

    def wait_ready(self, redis_url: str, timeout: float = 60) -> None:
        """Until its records consumer has joined the group (it names itself after its pid)."""
        from billing.storing.stream_consumer import GROUP
        from core.redis_keys import records_stream
        from tests.redis_helpers import client as redis_client

        client = redis_client(redis_url, socket_timeout=2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited:\n{self.output()}")
            try:
                names = [c["name"] for c in client.xinfo_consumers(records_stream(0), GROUP)]
            except redis.RedisError:
                names = []
            if any(name.endswith(f"-{self.pid}".encode()) for name in names):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the worker did not start within {timeout} s:\n{self.output()}")
