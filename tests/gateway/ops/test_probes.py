"""The probes of a gateway process (uvicorn, as in production) on a PostgreSQL and a Redis of
the test's own, stopped and frozen under it: /healthz keeps answering, /readyz says which store
is gone, and neither waits on a dead store."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.processes import ROOT, Gateway, momor_env
from tests.stores import PostgresServer, RedisServer

DATABASE = "momor_probes"
BOUND = 0.3  # MOMOR_PROBE_TIMEOUT_SECONDS of the gateway under test
# What an answer may take: the bound, plus the time a loaded test machine takes to answer.
PROMPT = BOUND + 0.7


class Deployment:
    def __init__(self, directory: Path) -> None:
        self.postgres, self.redis = PostgresServer(), RedisServer(durable=False)
        self.postgres.start()
        self.redis.start()
        self.postgres.create_database(DATABASE)
        self.env = momor_env(
            self.postgres.url(DATABASE), self.redis.url,
            MOMOR_PROBE_TIMEOUT_SECONDS=str(BOUND), MOMOR_JOURNAL_DIR=str(directory / "journal"),
            MOMOR_DB_TIMEOUT_SECONDS="1", MOMOR_REDIS_TIMEOUT_SECONDS="1",
        )  # fmt: skip
        migrate = [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"]
        subprocess.run(migrate, cwd=ROOT, env=self.env, check=True, timeout=300)  # noqa: S603 - our own manage.py, arguments written here
        self.gateway = Gateway(self.env, directory / "gateway.log")
        self.gateway.wait_ready()

    def close(self) -> None:
        self.gateway.close()
        self.redis.close()
        self.postgres.close()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    found = Deployment(tmp_path_factory.mktemp("probes"))
    yield found
    found.close()


def probe(deployment: Deployment, path: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.get(deployment.gateway.url + path, timeout=10)
    return response, time.monotonic() - started


def checks(deployment: Deployment) -> dict[str, str]:
    response, took = probe(deployment, "/readyz")
    assert took < PROMPT, f"/readyz took {took:.2f} s"
    body = response.json()
    assert response.status_code == (200 if body["status"] == "ready" else 503)
    return dict(body["checks"])


def ready_within(deployment: Deployment, seconds: float) -> dict[str, str]:
    deadline = time.monotonic() + seconds
    found = checks(deployment)
    while set(found.values()) != {"ok"} and time.monotonic() < deadline:
        time.sleep(0.1)
        found = checks(deployment)
    return found


def test_a_healthy_gateway_is_live_and_ready(deployment: Deployment) -> None:
    response, _ = probe(deployment, "/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert ready_within(deployment, 10) == {
        "catalog": "ok", "database": "ok", "redis": "ok", "handoffs": "ok",
    }  # fmt: skip


def test_probes_need_no_key_and_take_only_get(deployment: Deployment) -> None:
    response = httpx.post(deployment.gateway.url + "/healthz", timeout=5)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


def test_with_redis_stopped_it_is_live_but_not_ready(deployment: Deployment) -> None:
    ready_within(deployment, 10)
    deployment.redis.kill()
    try:
        response, took = probe(deployment, "/healthz")
        assert response.status_code == 200 and took < PROMPT
        found = checks(deployment)
        assert found["redis"].startswith("unreachable ("), found
        assert {found[name] for name in ("catalog", "database", "handoffs")} == {"ok"}
    finally:
        deployment.redis.start()
    assert ready_within(deployment, 10)["redis"] == "ok"


def test_with_redis_frozen_readyz_answers_within_its_bound(deployment: Deployment) -> None:
    ready_within(deployment, 10)
    deployment.redis.freeze()
    try:
        found = checks(deployment)
        assert found["redis"] == "no answer in time", found
    finally:
        deployment.redis.thaw()
    assert ready_within(deployment, 10)["redis"] == "ok"


def test_with_the_database_stopped_it_is_live_but_not_ready(deployment: Deployment) -> None:
    ready_within(deployment, 10)
    deployment.postgres.stop()
    try:
        response, took = probe(deployment, "/healthz")
        assert response.status_code == 200 and took < PROMPT
        found = checks(deployment)
        assert found["database"].startswith(("unreachable (", "no answer")), found
        assert {found[name] for name in ("catalog", "redis", "handoffs")} == {"ok"}
    finally:
        deployment.postgres.start()
    assert ready_within(deployment, 15)["database"] == "ok"


def test_with_both_stores_down_the_probes_still_answer_at_once(deployment: Deployment) -> None:
    ready_within(deployment, 10)
    deployment.postgres.stop()
    deployment.redis.freeze()
    try:
        for _ in range(3):
            response, took = probe(deployment, "/healthz")
            assert response.status_code == 200 and took < PROMPT
            found = checks(deployment)
            assert found["database"] != "ok" and found["redis"] != "ok"
    finally:
        deployment.redis.thaw()
        deployment.postgres.start()
    assert set(ready_within(deployment, 15).values()) == {"ok"}
