"""The live feed in production mode, as docs/operations.md runs it: the gateway under uvicorn (its
production command), PostgreSQL, Redis for the records stream and the channel layer, and a
Celery worker that stores the records and publishes them. A generations page left open longer
than several of the channel layer's blocking reads keeps its one websocket, and every call made
afterwards arrives in it. In embedded mode (no Redis) too, where a storing process beside the
gateway stores the records and the gateway publishes them to its in-memory channel layer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, expect

from accounts.models import Role
from bench.procs import storing_processes
from tests.browser.conftest import sign_in
from tests.conftest import make_key, make_org, make_user
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import build_catalog
from tests.processes import Worker, momor_env
from tests.real_server import RealServer, database_url, start
from tests.redis_helpers import flush

pytestmark = [pytest.mark.browser, pytest.mark.celery]

IDLE_SECONDS = 20  # four of channels_redis's 5 s blocking reads (BZPOPMIN)
CALLS = 6
QUICK_STOP = {"MOMOR_SHUTDOWN_GRACE_SECONDS": "1"}
HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}
# Counts the page's websockets: one for the whole test means it never had to reconnect.
COUNT_SOCKETS = """
(() => {
  const Original = window.WebSocket;
  window.momorSockets = 0;
  window.WebSocket = function (...args) { window.momorSockets += 1; return new Original(...args); };
  window.WebSocket.prototype = Original.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})();
"""


@dataclass
class Production:
    server: RealServer
    worker: Worker | None
    key: str


@pytest.fixture
def production(transactional_db: None, fake: FakeUpstream, tmp_path: Path) -> Iterator[Production]:
    flush(settings.REDIS_URL)
    build_catalog(fake.url)
    org = make_org("acme", credits=Decimal(100))
    key, _ = make_key(org, name="feed")
    make_user("alice", org, Role.OWNER)
    env = momor_env(database_url(), settings.REDIS_URL, MOMOR_JOURNAL_DIR=str(tmp_path / "j"))
    worker = Worker(env, tmp_path / "worker.log", "feed")
    server = start("uvicorn", MOMOR_JOURNAL_DIR=str(tmp_path / "journal"), **QUICK_STOP)
    try:
        worker.wait_ready(settings.REDIS_URL)
        yield Production(server, worker, key)
    finally:
        server.stop()
        worker.close()


@pytest.fixture
def embedded(transactional_db: None, fake: FakeUpstream, tmp_path: Path) -> Iterator[Production]:
    build_catalog(fake.url)
    org = make_org("acme", credits=Decimal(100))
    key, _ = make_key(org, name="feed")
    make_user("alice", org, Role.OWNER)
    server = start(
        "uvicorn", REDIS_URL="", MOMOR_CACHE_REDIS_URL="", MOMOR_BROKER_URL="",
        MOMOR_JOURNAL_DIR=str(tmp_path / "journal"), **QUICK_STOP,
    )  # fmt: skip
    try:
        yield Production(server, None, key)
    finally:
        server.stop()


def generations_page(browser: Browser, production: Production) -> Iterator[Page]:
    context = browser.new_context(base_url=production.server.url)
    context.set_default_timeout(15_000)
    context.add_init_script(COUNT_SOCKETS)
    page = context.new_page()
    sign_in(page, "alice")
    page.goto("/generations/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    yield page
    context.close()


@pytest.fixture
def alices_generations(browser: Browser, production: Production) -> Iterator[Page]:
    yield from generations_page(browser, production)


@pytest.fixture
def alices_embedded_generations(browser: Browser, embedded: Production) -> Iterator[Page]:
    yield from generations_page(browser, embedded)


def call(production: Production) -> str:
    auth = {"authorization": f"Bearer {production.key}"}
    url = production.server.url + "/v1/chat/completions"
    response = httpx.post(url, json=HELLO, headers=auth, timeout=30)
    assert response.status_code == 200, response.text
    return response.headers["X-Momor-Request-Id"]


def test_an_idle_generations_page_shows_every_call_made_after(
    alices_generations: Page, production: Production
) -> None:
    page = alices_generations
    time.sleep(IDLE_SECONDS)
    request_ids = [call(production) for _ in range(CALLS)]
    for request_id in request_ids:
        row = page.locator(f'#generations-table tr[data-request-id="{request_id}"]')
        expect(row).to_contain_text("openai/gpt-5")
    assert page.evaluate("window.momorSockets") == 1
    assert "TimeoutError" not in production.server.output()


def test_in_embedded_mode_each_call_arrives_in_the_live_feed(
    alices_embedded_generations: Page, embedded: Production
) -> None:
    page = alices_embedded_generations
    request_ids = [call(embedded) for _ in range(CALLS)]
    for request_id in request_ids:
        row = page.locator(f'#generations-table tr[data-request-id="{request_id}"]')
        expect(row).to_contain_text("openai/gpt-5")
    assert storing_processes(embedded.server.process.pid)  # stored there, published here
