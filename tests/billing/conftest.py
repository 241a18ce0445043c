"""Billing tests use the gateway tests' catalog on the fake upstream, plus what billing needs
beyond it: Redis emptied around every test (admission keys name the organization's id, and org
ids repeat after truncation), a real Celery worker, and Momor as separate processes sharing
Redis and the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from accounts.models import Organization
from billing.admission import select
from gateway.catalog.snapshot import catalog_fingerprint
from gateway.catalog.state import STATE
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import World, build_catalog
from tests.server_fixture import forget_state
from tests.stores import RedisServer

__all__ = ["Cluster", "World", "catalog_current", "test_database_url"]

ROOT = Path(__file__).resolve().parents[2]
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _admission_forgotten() -> Iterator[None]:
    """Every test starts with empty admission counters and in-memory state."""
    forget_state()
    yield
    forget_state()


def catalog_current(timeout: float = 5.0) -> None:
    """Make the gateway's catalog snapshot the database's: its refresher may have built one
    from the emptied tables just before the test wrote its catalog, or be building one from
    rows the test has since changed (it holds the refresh lock while it does)."""
    STATE.refresh_now()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        catalog = STATE.catalog
        if catalog is not None and catalog.fingerprint == catalog_fingerprint():
            return
        time.sleep(0.02)
        STATE.refresh_now()
    raise AssertionError("the gateway's catalog never caught up with the database")


@pytest.fixture
def world(gateway: str, fake: FakeUpstream) -> World:
    """The gateway tests' world (catalog on the fake, acme with $100 and a key), with the
    gateway's catalog snapshot current before the test's first call."""
    build_catalog(fake.url)
    org: Organization = make_org("acme", credits=Decimal(100))
    key, _ = make_key(org, name="test")
    catalog_current()
    return World(gateway, fake, org, key)


def test_database_url() -> str:
    """The URL of the database pytest-django created, for processes started by a test."""
    from django.db import connection

    conf = connection.settings_dict
    user = quote(conf["USER"] or "", safe="")
    password = f":{quote(conf['PASSWORD'], safe='')}" if conf.get("PASSWORD") else ""
    host, port = conf["HOST"] or "127.0.0.1", conf["PORT"] or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{conf['NAME']}"


test_database_url.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a Momor process started by a test: the test database and Redis."""
    from django.conf import settings

    env = dict(os.environ)
    env.update(
        DATABASE_URL=test_database_url(),
        REDIS_URL=settings.REDIS_URL,
        MOMOR_SECRET_KEY=os.environ["MOMOR_SECRET_KEY"],
        MOMOR_ENCRYPTION_KEY=os.environ["MOMOR_ENCRYPTION_KEY"],
        MOMOR_REFRESH_SECONDS="0.2",
        MOMOR_DB_CONN_MAX_AGE="0",
        DJANGO_SETTINGS_MODULE="momor.settings",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def celery_worker(gateway: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real `celery -A momor worker` on the test database and Redis, with an empty queue.
    It depends on `gateway` so that Redis is emptied before it declares its queue, and it is
    stopped before Redis is emptied again."""
    from momor.celery import app

    if not app.conf.broker_url:
        pytest.skip("a Celery worker needs REDIS_URL")
    app.control.purge()
    command = [sys.executable, "-m", "celery", "-A", "momor", "worker", "--pool", "solo"]
    command += ["-l", "warning", "-n", f"billing-test-{os.getpid()}@%h"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    worker = subprocess.Popen(command, cwd=ROOT, env=child_env())  # noqa: S603 - our own Celery worker, argv written here
    try:
        _wait_for_worker(app, worker)
        yield worker
    finally:
        stop(worker)


def _wait_for_worker(app: Any, worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(f"the Celery worker exited with {worker.returncode}")
        if app.control.ping(timeout=0.5):
            return
    raise RuntimeError("the Celery worker did not answer a ping within 30 seconds")


@dataclass
class Cluster:
    """Two Momor processes sharing Redis and the database, each recording through Celery."""

    urls: list[str]
    world: World

    def post(self, index: int, body: Any, *, key: str | None = None) -> httpx.Response:
        headers = {"authorization": f"Bearer {key or self.world.key}"}
        url = self.urls[index % len(self.urls)] + "/v1/chat/completions"
        return httpx.post(url, json=body, headers=headers, timeout=60)


def _start_gateway() -> tuple[subprocess.Popen[bytes], str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    command = [sys.executable, "-m", "uvicorn", "momor.asgi:application", "--fd"]
    command += [str(sock.fileno()), "--lifespan", "off", "--log-level", "warning"]
    process = subprocess.Popen(  # noqa: S603 - our own uvicorn, argv written here
        command, cwd=ROOT, env=child_env(), pass_fds=[sock.fileno()]
    )
    sock.close()
    return process, url


def _wait_for_gateway(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 90  # importing Django takes 15 s on a busy 2-core machine
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"a Momor process exited with {process.returncode}")
        try:
            # an anonymous lookup is refused without touching the database
            if httpx.get(url + "/v1/generation?id=x", timeout=2).status_code == 401:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"Momor at {url} did not start within 90 seconds")


@pytest.fixture
def cluster(world: World, celery_worker: subprocess.Popen[bytes]) -> Iterator[Cluster]:
    """Two gateway processes (uvicorn) over the world's catalog, and a Celery worker."""
    started = [_start_gateway() for _ in range(2)]
    try:
        for process, url in started:
            _wait_for_gateway(process, url)
        yield Cluster([url for _, url in started], world)
    finally:
        for process, _ in started:
            stop(process)


@contextmanager
def redis_of_its_own(settings: Any, cooldown: float) -> Iterator[RedisServer]:
    """A Redis of the test's own, which the gateway (in this process) uses from then on, its
    breaker cooling down for `cooldown` seconds once it fails."""
    server = RedisServer(durable=True)
    server.start()
    settings.REDIS_URL = server.url
    settings.MOMOR_BREAKER_COOLDOWN_SECONDS = cooldown
    select.store.cache_clear()
    try:
        yield server
    finally:
        server.close()
        select.store.cache_clear()
