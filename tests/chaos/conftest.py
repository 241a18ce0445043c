"""The chaos suite's deployment: a PostgreSQL cluster and a Redis (append-only, synced on every
write) of the suite's own, migrated once per session, with a catalog whose one model is
served by the fake upstream; each scenario starts its own gateways and Celery workers on them,
with a fresh organization and key."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fake_upstream_fixture import FakeUpstream
from tests.processes import ROOT, Gateway, Worker, momor_env
from tests.stores import PostgresServer, RedisServer

DATABASE = "momor_chaos"
MODEL = "chaos/echo"
UPSTREAM_ID = "chaos-echo"
KEY_ENV = "MOMOR_PROVIDER_KEY_CHAOSFAKE"
CATALOG = f"""
[[providers]]
name = "chaosfake"
api = "openai_compatible"
base_url = "{{base_url}}"
key_env = "{KEY_ENV}"

[[models]]
id = "{MODEL}"
released = 2025-01-01

[[offerings]]
model = "{MODEL}"
provider = "chaosfake"
upstream_id = "{UPSTREAM_ID}"
prompt_price = 1.0
completion_price = 2.0
"""
# Short enough that a scenario sees what a killed process left expire, claimed or replayed.
TIMINGS = {
    "MOMOR_RESERVATION_TTL_SECONDS": "4",
    "MOMOR_RECORDS_CLAIM_SECONDS": "3",
    "MOMOR_BREAKER_COOLDOWN_SECONDS": "1",
    "MOMOR_REDIS_TIMEOUT_SECONDS": "1",
    "MOMOR_DB_TIMEOUT_SECONDS": "2",
    "MOMOR_SHUTDOWN_GRACE_SECONDS": "20",
}


@dataclass
class Stores:
    postgres: PostgresServer
    redis: RedisServer
    fake: FakeUpstream
    directory: Path

    @property
    def database_url(self) -> str:
        return self.postgres.url(DATABASE)

    def env(self, *, embedded: bool = False, **extra: str) -> dict[str, str]:
        """A Momor process's environment on these stores (`embedded`: without Redis)."""
        settings = {KEY_ENV: "sk-chaos-fake", "MOMOR_LOG_LEVEL": "WARNING", **TIMINGS, **extra}
        redis_url = None if embedded else self.redis.url
        return momor_env(self.database_url, redis_url, **settings)

    def manage(self, *args: str) -> str:
        done = subprocess.run(  # noqa: S603 - our own manage.py, arguments written here
            [sys.executable, "manage.py", *args],
            cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
        return done.stdout.strip()


@pytest.fixture(scope="session")
def chaos_stores(
    fake_upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stores]:
    fake_upstream.reset()  # a test before may have scripted its offerings to fail
    postgres, redis = PostgresServer(), RedisServer(durable=True)
    try:
        postgres.start()
        postgres.create_database(DATABASE)
        redis.start()
        stores = Stores(postgres, redis, fake_upstream, tmp_path_factory.mktemp("chaos"))
        stores.manage("migrate", "--no-input")
        catalog = stores.directory / "catalog.toml"
        catalog.write_text(CATALOG.format(base_url=f"{fake_upstream.url}/v1"))
        stores.manage("load_catalog", str(catalog))
        yield stores
    finally:
        redis.close()
        postgres.close()


@dataclass
class Deployment:
    """One scenario's processes, organization and key."""

    stores: Stores
    org: str
    key: str
    gateways: list[Gateway] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)

    def gateway(self, journal: str | None = None) -> Gateway:
        """A gateway process; `journal` names its journal directory (its host, as it were)."""
        directory = self.stores.directory / f"journal-{journal or uuid.uuid4().hex[:8]}"
        log = self.stores.directory / f"gateway-{len(self.gateways)}.log"
        started = Gateway(self.stores.env(MOMOR_JOURNAL_DIR=str(directory)), log)
        self.gateways.append(started)
        started.wait_ready()
        return started

    def worker(self) -> Worker:
        name = f"chaos-{len(self.workers)}-{uuid.uuid4().hex[:6]}"
        log = self.stores.directory / f"{name}.log"
        started = Worker(self.stores.env(), log, name)
        self.workers.append(started)
        started.wait_ready(self.stores.redis.url)
        return started

    def close(self) -> None:
        """Workers are stopped as an operator would (SIGTERM): one killed here would leave its
        last batch to be claimed in the next scenario."""
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.terminate()
        for process in [*self.gateways, *self.workers]:
            process.close()


@pytest.fixture
def deployment(chaos_stores: Stores) -> Iterator[Deployment]:
    org = f"chaos-{uuid.uuid4().hex[:8]}"
    chaos_stores.manage("create_org", org, "--credits", "1000")
    key = chaos_stores.manage("create_api_key", "--org", org, "--name", "chaos")
    chaos_stores.fake.script(
        UPSTREAM_ID,
        text="one two three four five six",
        chunks=6,
        chunk_delay=0.02,
        delay_first_byte=0.02,
        usage={"prompt_tokens": 12, "completion_tokens": 6},
    )
    deployed = Deployment(chaos_stores, org, key)
    try:
        yield deployed
    finally:
        deployed.close()
