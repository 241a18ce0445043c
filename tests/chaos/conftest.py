"""The chaos suite's deployment: a PostgreSQL cluster and a Redis (append-only, synced on every
write) of the suite's own, migrated once per session, with a catalog of models served by the
fake upstream (`OFFERED`); each scenario starts its own gateways and Celery workers on them,
with a fresh organization and key."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.fake_upstream_fixture import FakeUpstream
from tests.processes import ROOT, Gateway, Worker, momor_env
from tests.stores import PostgresServer, RedisServer

DATABASE = "momor_chaos"
KEY_ENV = "MOMOR_PROVIDER_KEY_CHAOSFAKE"
PROVIDERS = {
    "chaosfake": ("openai_compatible", "/v1"),
    "chaosopenai": ("openai", "/v1"),
    "chaosanthropic": ("anthropic", "/anthropic"),
}
"""Each provider of the catalog: its API and its path on the fake upstream."""

Tokens = tuple[int, int]
"""A call's prompt and completion tokens."""


@dataclass(frozen=True)
class Offered:
    """A model of the catalog, served by one offering on the fake upstream, at its prices (USD
    a million tokens); its provider's API names the tokens it reports by `usage_names`."""

    model: str
    provider: str
    upstream_id: str
    prompt_price: Decimal
    completion_price: Decimal | None
    usage_names: tuple[str, str | None]
    tokens: Tokens
    """What the fake reports for each call unless a scenario scripts otherwise."""

    def usage(self, tokens: Tokens) -> dict[str, int]:
        prompt, completion = self.usage_names
        return {prompt: tokens[0]} | ({completion: tokens[1]} if completion else {})

    def cost(self, prompt: int, completion: int) -> Decimal:
        per_million = prompt * self.prompt_price + completion * (self.completion_price or 0)
        return per_million / 1_000_000


CHAT_USAGE = ("prompt_tokens", "completion_tokens")
IN_OUT_USAGE = ("input_tokens", "output_tokens")  # Anthropic's and OpenAI Responses' names
ECHO = Offered("chaos/echo", "chaosfake", "chaos-echo", Decimal(1), Decimal(2), CHAT_USAGE, (12, 6))
CLAUDE = Offered(
    "chaos/claude", "chaosanthropic", "chaos-claude", Decimal(3), Decimal(15),
    IN_OUT_USAGE, (21, 7),
)  # fmt: skip
GPT = Offered(
    "chaos/gpt", "chaosopenai", "chaos-gpt", Decimal("1.25"), Decimal(10), IN_OUT_USAGE, (17, 5)
)
EMBED = Offered(
    "chaos/embed", "chaosfake", "chaos-embed", Decimal("0.02"), None, ("prompt_tokens", None),
    (9, 0),
)  # fmt: skip
OFFERED = (ECHO, CLAUDE, GPT, EMBED)
"""Chat Completions calls go to chaos/echo; Messages calls to chaos/claude (served natively by
Anthropic) and chaos/echo (translated); Responses calls to chaos/gpt (natively by OpenAI) and
chaos/echo (translated); embeddings calls to chaos/embed."""
MODEL, UPSTREAM_ID = ECHO.model, ECHO.upstream_id
ANSWER = {"text": "one two three four five six", "chunks": 6, "chunk_delay": 0.02,
          "delay_first_byte": 0.02}  # fmt: skip


def catalog(base_url: str) -> str:
    """The catalog's TOML, its providers on the fake upstream at `base_url`."""
    providers = [
        f'[[providers]]\nname = "{name}"\napi = "{api}"\nbase_url = "{base_url}{path}"\n'
        f'key_env = "{KEY_ENV}"\n'
        for name, (api, path) in PROVIDERS.items()
    ]
    return "\n".join([*providers, *map(_entries, OFFERED)])


def _entries(offered: Offered) -> str:
    kind = "chat" if offered.completion_price is not None else "embedding"
    model = f'[[models]]\nid = "{offered.model}"\nkind = "{kind}"\nreleased = 2025-01-01\n'
    offering = (
        f'[[offerings]]\nmodel = "{offered.model}"\nprovider = "{offered.provider}"\n'
        f'upstream_id = "{offered.upstream_id}"\nprompt_price = {offered.prompt_price}\n'
    )
    if offered.completion_price is not None:
        offering += f"completion_price = {offered.completion_price}\n"
    return f"{model}\n{offering}"


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
        written = stores.directory / "catalog.toml"
        written.write_text(catalog(fake_upstream.url))
        stores.manage("load_catalog", str(written))
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
    tokens: dict[str, Tokens] = field(default_factory=dict)
    """The tokens each model's calls report, as the fake is scripted: what the books expect."""

    def answer(self, offered: Offered, tokens: Tokens | None = None, **behaviour: Any) -> None:
        """The fake answers the offering's calls as `ANSWER` and `behaviour` say, reporting
        `tokens` (the offering's own unless given)."""
        tokens = tokens or offered.tokens
        self.tokens[offered.model] = tokens
        scripted = {**ANSWER, **behaviour, "usage": offered.usage(tokens)}
        self.stores.fake.script(offered.upstream_id, **scripted)

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
    deployed = Deployment(chaos_stores, org, key)
    for offered in OFFERED:
        deployed.answer(offered)
    try:
        yield deployed
    finally:
        deployed.close()
