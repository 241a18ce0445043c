"""Momor itself as a real HTTP server for tests: the project's ASGI application under uvicorn
on a loopback port, in a thread of the test process (so it shares the test database)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis
import uvicorn
from pytest_django import DjangoDbBlocker

from gateway.catalog.state import STATE
from gateway.request.identity import Identities
from tests.redis_helpers import flush


class GatewayServer:
    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        from momor.asgi import application

        config = uvicorn.Config(application, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="momor-test-server", daemon=True)

    def _run(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.sock]))

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test gateway did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def forget_state() -> None:
    """Drop what the gateway holds in memory and in Redis (the database is emptied between
    tests)."""
    from django.conf import settings

    from billing.admission import select
    from core.breaker import REDIS
    from gateway.edge import request_ids
    from gateway.routing import candidate_cache, sessions
    from gateway.routing import performance as figures

    STATE.pause()
    for local in (figures, request_ids, sessions):
        local.forget_local()
    candidate_cache.forget()
    REDIS.reset()
    STATE.catalog = None
    STATE.identities = Identities()
    select.store.cache_clear()
    select.local_store.cache_clear()
    for url in {settings.REDIS_URL, settings.MOMOR_CACHE_REDIS_URL} - {""}:
        with contextlib.suppress(redis.ConnectionError):  # a test may point it nowhere
            flush(url)


def _disconnect_server_threads(django_db_blocker: DjangoDbBlocker) -> None:
    """The server's database threads keep connections open; end them so the test database
    can be dropped."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_terminate_backend(pid) {others}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cursor.execute(f"SELECT count(*) {others}")
            if cursor.fetchone()[0] == 0:
                break
            time.sleep(0.05)


@pytest.fixture(scope="session")
def gateway_server(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker
) -> Iterator[GatewayServer]:
    server = GatewayServer()
    server.start()
    yield server
    server.stop()
    _disconnect_server_threads(django_db_blocker)


@pytest.fixture
def gateway(gateway_server: GatewayServer, transactional_db: None) -> Iterator[str]:
    """The base URL of a running Momor whose in-memory state starts empty."""
    forget_state()
    STATE.paused = False
    yield gateway_server.url
    from billing.recording.hand_off import drain

    drain()
    forget_state()
